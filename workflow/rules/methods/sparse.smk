# Method type sparse: the chunks' and the questions' term weights and its runs; helpers in sparse_common.smk.
from rankbench.retrieval.registry import method_setting


# The chunks' term weights under a sparse encoder: encoded and indexed once per (chunker, encoder).
rule sparse_index:
    input:
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    output:
        index=f"{R}/corpus/{{chunker}}/sparse/{{encoder}}.npz",
    log:
        f"{LOGS}/sparse_index/{{chunker}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/sparse_index/{{chunker}}/{{encoder}}.tsv"
    # the slow start of the dense chain, early: see Priorities in resources.smk
    priority: 9
    conda:
        "../../../environment.yml"
    threads: encoding_threads
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
    script:
        "../../scripts/sparse_index.py"


# The questions' term weights under a sparse encoder, once per (version, encoder) and per rewrite source.
rule sparse_queries:
    input:
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        queries=f"{R}/{{qset}}/sparse-queries/{{encoder}}.npz",
        timing=f"{R}/timings/sparse_queries/{{qset}}/{{encoder}}.json",
    log:
        f"{LOGS}/sparse_queries/{{qset}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/sparse_queries/{{qset}}/{{encoder}}.tsv"
    # 2 threads: above any two 1-thread jobs, or it never finds both cores free (see Priorities in resources.smk)
    priority: 19
    conda:
        "../../../environment.yml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
    script:
        "../../scripts/sparse_queries.py"


rule sparse_rewritten_queries:
    input:
        questions=f"{R}/{{qset}}/rewrites/{{rewrite}}.parquet",
    output:
        queries=f"{R}/{{qset}}/sparse-queries/{{rewrite}}/{{encoder}}.npz",
        timing=f"{R}/timings/sparse_queries/{{qset}}/{{rewrite}}/{{encoder}}.json",
    log:
        f"{LOGS}/sparse_queries/{{qset}}/{{rewrite}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/sparse_queries/{{qset}}/{{rewrite}}/{{encoder}}.tsv"
    # 2 threads: above any two 1-thread jobs, or it never finds both cores free (see Priorities in resources.smk)
    priority: 19
    conda:
        "../../../environment.yml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
    script:
        "../../scripts/sparse_queries.py"


rule retrieve_sparse:
    input:
        index=lambda wildcards: corpus_path(
            wildcards.method,
            "sparse",
            f"{METHOD_SPECS[wildcards.method]['encoder']}.npz",
        ),
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        queries=lambda wildcards: sparse_queries_path(wildcards.method, wildcards.qset),
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("retrieve_sparse")),
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        filters=lambda wildcards: sorted(
            method_setting(METHOD_SPECS[wildcards.method], "filters")
        ),
    script:
        "../../scripts/retrieve_sparse.py"
