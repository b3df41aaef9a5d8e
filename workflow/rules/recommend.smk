# The recommended configuration of each version (docs/concepts/report.md, *Recommended configuration*): every axis
# the grid varies decided from the per-question tables, written as a config fragment, the box the comparison page
# and index.html open with, and the state `rankbench recommend` exits on. Orderings come from deterministic costs
# only (index bytes, dimensions, depth, prompt tokens, k), so the box stays byte-identical across runs.
from rankbench.configuration.defaults import abstention_target

RECOMMENDED = ("recommended.yaml", "recommended.md", "recommended.json")


rule recommend:
    input:
        metrics=expand(f"{R}/{{{{qset}}}}/metrics/{{method}}.parquet", method=METHODS),
        evidence=expand(
            f"{R}/{{{{qset}}}}/evidence/{{method}}.parquet",
            method=methods_at_grain("chunk"),
        ),
        top1=lambda wildcards: [] if QUICK else zones_input(wildcards, "top1.parquet"),
        stats=sorted({dense_index_stats(m) for m in vector_size_methods()}),
    output:
        fragment=f"{R}/{{qset}}/recommended.yaml",
        box=f"{R}/{{qset}}/recommended.md",
        state=f"{R}/{{qset}}/recommended.json",
    log:
        f"{LOGS}/recommend/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/recommend/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset=DATASET["name"],
        methods=METHOD_SPECS,
        config={
            "chunker": config["chunker"],
            "chunkers": config["chunkers"],
            "encoders": config.get("encoders", {}),
            "evaluation": {"baseline": EVALUATION["baseline"]},
        },
        chunkers={m: chunker_of(m) for m in methods_at_grain("chunk")},
        twins=FLOAT_TWINS,
        stats={m: dense_index_stats(m) for m in vector_size_methods()},
        settings={
            "grain": REPORT["grain"],
            "headline": REPORT["headline"],
            "ks": EVALUATION["ks"],
            "margins": MARGINS,
            "alpha": REPORT["alpha"],
            "seed": EVALUATION["seed"],
            "resamples": EVALUATION["bootstrap_resamples"],
            "target": abstention_target(config),
        },
    script:
        in_worker("../scripts/recommend.py")
