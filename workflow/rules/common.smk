# The run's settings, read once at start: the config after every start check, the dataset, the versions, the
# evaluation and report settings; the shared helpers follow in their own files (included below, in this order).
from rankbench.configuration.defaults import (
    DECISION_DEFAULTS,
    HISTORY_FILE,
    RESULTS,
    evaluation_settings,
)
from rankbench.configuration.models import prompt_tokenizer
from rankbench.execution.local_run import (
    end_local_run,
    model_libraries,
    start_local_run,
)
from rankbench.io.frozen import read_lock
from rankbench.project.drafts import is_draft, record_frozen_results
from rankbench.project.start_checks import start_run
from rankbench.records.provenance import canonical_config, config_hash, qset_config

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


include: "method_tables.smk"
include: "paths.smk"
include: "resources.smk"
include: "outputs.smk"


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
