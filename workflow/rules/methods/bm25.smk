# Method type bm25: its index (shared by the methods of one chunker and settings) and its runs; helpers in
# bm25_common.smk.
from rankbench.configuration.defaults import DATASET_DEFAULTS
from rankbench.retrieval.registry import method_setting


rule bm25_index:
    input:
        chunks=lambda wildcards: index_corpus_path(wildcards.method, "chunks.parquet"),
    output:
        index=f"{R}/corpus/{{chunker}}/bm25/{{method}}.npz",
    log:
        f"{LOGS}/bm25_index/{{chunker}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/bm25_index/{{chunker}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice({bm25_index_name(m) for m in methods_indexed_by("bm25_index")}),
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 28),
        runtime=60,
    params:
        spec=lambda wildcards: index_keys(METHOD_SPECS[wildcards.method]),
        language=DATASET.get("language", DATASET_DEFAULTS["language"]),
        # The search backends of the methods reading this index: when one is numba, this job compiles its kernels
        # into the cache once, before the BM25 jobs fan out.
        backends=lambda wildcards: bm25_backends(wildcards.method),
        numba_cache=f"{R}/cache/numba",
    script:
        in_worker("../../scripts/bm25_index.py")


rule retrieve_bm25:
    input:
        index=lambda wildcards: index_corpus_path(
            wildcards.method, "bm25", f"{bm25_index_name(wildcards.method)}.npz"
        ),
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        questions=f"{R}/{{qset}}/questions.parquet",
        queries=lambda wildcards: queries_path(wildcards.method, wildcards.qset),
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("retrieve_bm25")),
    # short, and what most rerank and fusion methods read: first of the runs, see Priorities in resources.smk
    priority: 7
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 3),
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        filters=lambda wildcards: sorted(
            method_setting(METHOD_SPECS[wildcards.method], "filters")
        ),
        prf=lambda wildcards: METHOD_SPECS[wildcards.method].get("prf"),
        backend=lambda wildcards: METHOD_SPECS[wildcards.method].get(
            "backend", DEFAULT_BACKEND
        ),
        numba_cache=f"{R}/cache/numba",
    script:
        in_worker("../../scripts/retrieve_bm25.py")
