import re
from pathlib import Path

from rankbench.config import (
    check_methods,
    check_paths,
    evaluation_settings,
    method_chunker,
)
from rankbench.cost import method_stages
from rankbench.frozen import read_lock
from rankbench.provenance import (
    canonical_config,
    config_hash,
    diff_pairs,
    qset_config,
    report_settings,
)

CONFIG_SOURCE = str((workflow.overwrite_configfiles or ["config/config.yaml"])[-1])
check_methods(config, CONFIG_SOURCE)
check_paths(config, CONFIG_SOURCE)

SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"
DATASET = config["dataset"]
R = f"{config.get('results', 'results')}/{DATASET['name']}"
EVALUATION = evaluation_settings(config)
QSETS = sorted(config["qsets"])
METHODS = sorted(config["methods"])
LOCK = read_lock(DATASET["lock"]) if DATASET["format"] == "native" else {}


def choice(names):
    """A wildcard regex matching exactly these names (or nothing)."""
    return "|".join(re.escape(name) for name in sorted(names)) or "(?!)"


def methods_of_type(kind):
    return [name for name in METHODS if config["methods"][name]["type"] == kind]


def chunker_of(method):
    return method_chunker(config, method, CONFIG_SOURCE)


def method_spec(method):
    """The method's config with sorted keys: a plain, deterministic params value."""
    return dict(sorted(config["methods"][method].items()))


def encoder_spec(encoder):
    return dict(sorted(config["encoders"][encoder].items()))


def qset_files(wildcards):
    """The files that make a question-set version: its JSONL, or a BEIR split's queries and qrels."""
    if DATASET["format"] == "native":
        return [config["qsets"][wildcards.qset]["path"]]
    split = config["qsets"][wildcards.qset]["split"]
    return [f"{DATASET['path']}/queries.jsonl", f"{DATASET['path']}/qrels/{split}.tsv"]


def corpus_file():
    if DATASET["format"] == "native":
        return DATASET["corpus"]
    return f"{DATASET['path']}/corpus.jsonl"


def run_path(method, qset="{qset}"):
    return f"{R}/{qset}/runs/{method}.parquet"


def all_outputs():
    outputs = []
    for qset in QSETS:
        outputs += [run_path(method, qset) for method in METHODS]
        outputs += [f"{R}/{qset}/runs/{method}.trec" for method in METHODS]
        outputs += [f"{R}/{qset}/aggregate.parquet", f"{R}/{qset}/comparison.md"]
        outputs += [f"{R}/{qset}/{page}.html" for page in ("failures", "calibration")]
        outputs += [
            f"{R}/{qset}/plots/{figure}.svg"
            for figure in ("recall", "bars", "kinds", "grades")
        ]
    outputs += [f"{R}/diffs/{a}-vs-{b}.html" for a, b in config.get("diffs", [])]
    return outputs


def corpus_path(method, *parts):
    """A corpus-side file of the chunker a method ranks."""
    return f"{R}/corpus/{chunker_of(method)}/" + "/".join(parts)


def scorer_encoder(method):
    scorer = config["methods"][method]["scorer"]
    return scorer.get("encoder") if scorer["kind"] == "bi-encoder" else None


def rerank_inputs(wildcards):
    method = wildcards.method
    inputs = {
        "run": run_path(config["methods"][method]["input"], wildcards.qset),
        "questions": f"{R}/{wildcards.qset}/questions.parquet",
        "chunks": corpus_path(method, "chunks.parquet"),
    }
    encoder = scorer_encoder(method)
    if encoder:
        inputs["query_embeddings"] = (
            f"{R}/{wildcards.qset}/query-embeddings/{encoder}.npy"
        )
        inputs["chunk_embeddings"] = corpus_path(method, "embeddings", f"{encoder}.npy")
    return inputs


wildcard_constraints:
    qset=choice(QSETS),
    chunker=choice(config["chunkers"]),
    encoder=choice(config.get("encoders", {})),


# The report: settings, provenance, and what each figure and cost row reads.
CONFIG_JSON = {q: canonical_config(qset_config(config, q)) for q in QSETS}
CONFIG_SHA256 = {q: config_hash(text) for q, text in CONFIG_JSON.items()}
REPORT = report_settings(config, EVALUATION["ks"], CONFIG_SOURCE)
DIFFS = diff_pairs(config, CONFIG_SOURCE)
HISTORY = f"{config.get('results', 'results')}/history.jsonl"
FIGURES = ("recall", "bars", "kinds", "grades")


def cost_plan(wildcards):
    """Per method: (stage, side, benchmark file) of every benchmarked job its run needs (file names from the rules)."""
    plan = {}
    for method in METHODS:
        plan[method] = [
            [
                stage,
                side,
                getattr(rules, stage).benchmark.format(qset=wildcards.qset, **values),
            ]
            for stage, side, values in method_stages(
                config["methods"], method, chunker_of
            )
        ]
    return plan


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
