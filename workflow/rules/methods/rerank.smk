# Method type rerank: another method's run reordered by a scorer; helpers in rerank_common.smk.


rule rerank:
    input:
        unpack(rerank_inputs),
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("rerank")),
    # the longest retrieval job (a model's load), first of them: see Priorities in resources.smk
    priority: 7
    conda:
        "../../../environment.yml"
    threads: rerank_threads
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        depth=lambda wildcards: method_setting(METHOD_SPECS[wildcards.method], "depth"),
        scorer=lambda wildcards: scorer_spec(wildcards.method),
    script:
        in_worker("../../scripts/rerank.py", worker="model")
