# Method types rrf, combsum and combmnz: one rule fuses the runs of their inputs.
from rankbench.retrieval.registry import NORMALIZATION, RRF_K


rule fuse:
    input:
        runs=lambda wildcards: [
            run_path(name, wildcards.qset)
            for name in METHOD_SPECS[wildcards.method]["inputs"]
        ],
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("fuse")),
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 1
    params:
        kind=lambda wildcards: METHOD_SPECS[wildcards.method]["type"],
        # Both defaults for every fusion type (the script uses its type's): plain, unchanged params.
        k=lambda wildcards: METHOD_SPECS[wildcards.method].get("k", RRF_K),
        normalization=lambda wildcards: METHOD_SPECS[wildcards.method].get(
            "normalization", NORMALIZATION
        ),
        weights=lambda wildcards: METHOD_SPECS[wildcards.method].get("weights"),
        depth=EVALUATION["depth"],
    script:
        "../../scripts/fuse.py"
