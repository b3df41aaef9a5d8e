# What a run builds (all, quick, each version's pages) and what the cost page reads of the jobs behind each method.
from rankbench.records.cost import method_stages
from rankbench.records.timing import timing_path

# Pages saying how sure the comparison is (issue 15), built for every version.
HOW_SURE_PAGES = ("budget", "robustness")


def index_pages():
    """Each version's pages and plots the index links: the comparison alone in a quick run."""
    if QUICK:
        return ["comparison.html", "breakdowns.html"]
    return [
        "comparison.html",
        "breakdowns.html",
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
        for name in (
            "aggregate.parquet",
            "comparison.md",
            "comparison.html",
            "recommended.yaml",
            "breakdowns.html",
        )
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
            f"{R}/{qset}/recommended.yaml",
            f"{R}/{qset}/breakdowns.md",
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


def api_usage(wildcards):
    """Benchmark file -> usage file (texts sent, tokens billed) of each embedding job of an API encoder that the
    cost plan of the version counts (an input function: api_usage_of its version)."""
    return api_usage_of(wildcards.qset)


def api_usage_of(qset):
    """api_usage of a version named."""
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
                fields = dict(qset=qset, shard=shard, **values)
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
