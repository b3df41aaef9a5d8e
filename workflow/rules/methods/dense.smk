# Method type dense: its FAISS indexes, its runs, the recall of an approximate index and the vector-size page;
# helpers in dense_common.smk.
from rankbench.retrieval.registry import method_setting


rule faiss_index:
    input:
        embeddings=f"{R}/corpus/{{chunker}}/embeddings/{{encoder}}.npy",
    output:
        index=f"{R}/corpus/{{chunker}}/faiss/{{encoder}}/{{index}}.faiss",
        # Its bytes on disk, build seconds, vectors and dimension (cost and vector-size pages).
        stats=f"{R}/corpus/{{chunker}}/faiss/{{encoder}}/{{index}}.json",
    log:
        f"{LOGS}/faiss_index/{{chunker}}/{{encoder}}/{{index}}.log",
    benchmark:
        f"{R}/benchmarks/faiss_index/{{chunker}}/{{encoder}}/{{index}}.tsv"
    wildcard_constraints:
        index=choice(FAISS_BUILDS),
    # the slow start of the dense chain, early: see Priorities in resources.smk
    priority: 9
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 2.2),
        runtime=60,
    params:
        spec=lambda wildcards: FAISS_BUILDS[wildcards.index],
    script:
        in_worker("../../scripts/faiss_index.py")


rule retrieve_dense:
    input:
        index=lambda wildcards: dense_index_path(wildcards.method),
        vectors=lambda wildcards: dense_vectors(wildcards.method),
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        queries=lambda wildcards: query_embeddings_path(
            wildcards.qset,
            METHOD_SPECS[wildcards.method]["encoder"],
            METHOD_SPECS[wildcards.method].get("rewrite"),
        ),
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("retrieve_dense")),
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 2),
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        index=lambda wildcards: dict(
            sorted(vars(dense_index(wildcards.method)).items())
        ),
        filters=lambda wildcards: sorted(
            method_setting(METHOD_SPECS[wildcards.method], "filters")
        ),
    script:
        in_worker("../../scripts/retrieve_dense.py")


rule ann_recall:
    input:
        index=lambda wildcards: dense_index_path(wildcards.method),
        exact=lambda wildcards: dense_index_path(wildcards.method, IndexSpec()),
        vectors=lambda wildcards: dense_vectors(wildcards.method),
        queries=lambda wildcards: query_embeddings_path(
            wildcards.qset,
            METHOD_SPECS[wildcards.method]["encoder"],
            METHOD_SPECS[wildcards.method].get("rewrite"),
        ),
    output:
        recall=f"{R}/{{qset}}/ann-recall/{{method}}.parquet",
        table=f"{R}/{{qset}}/ann-recall/{{method}}.md",
    log:
        f"{LOGS}/ann_recall/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/ann_recall/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(approximate_methods()),
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 1.3),
    params:
        index=lambda wildcards: dict(
            sorted(vars(dense_index(wildcards.method)).items())
        ),
        ks=sorted(set(EVALUATION["ks"]) | {EVALUATION["depth"]}),
    script:
        in_worker("../../scripts/ann_recall.py")


# Index size against quality: each compressed dense index beside its float flat twin (only when a method compresses).
rule vector_size_page:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        pairs=f"{R}/{{qset}}/pairs.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        served=lambda wildcards: sorted(
            {path for m in vector_size_methods() for path in SERVED_FILES[m]}
        ),
    output:
        page=f"{R}/{{qset}}/vector-size.md",
        html=report(
            f"{R}/{{qset}}/vector-size.html",
            category="Comparison",
            subcategory="{qset}",
            caption="../../report/vector-size.rst",
        ),
    log:
        f"{LOGS}/vector_size_page/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/vector_size_page/{{qset}}.tsv"
    conda:
        "../../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        dataset=DATASET["name"],
        report=REPORT,
        resamples=EVALUATION["bootstrap_resamples"],
        twins=FLOAT_TWINS,
        indexes={m: dense_index(m).settings for m in vector_size_methods()},
        served={m: SERVED_FILES[m] for m in vector_size_methods()},
    script:
        in_worker("../../scripts/vector_size_page.py")
