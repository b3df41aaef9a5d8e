# Method type vectordb: the collection it builds, its runs and its ANN recall; helpers in vectordb_common.smk.


# A vector database's collection of the chunk embeddings (and its ANN index), built once per (chunker, encoder,
# engine and index build parameters). The manifest, written last, is the output; the database is the folder beside it.
rule vectordb_collection:
    input:
        embeddings=f"{R}/corpus/{{chunker}}/embeddings/{{encoder}}.npy",
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    output:
        manifest=f"{R}/corpus/{{chunker}}/vectordb/{{encoder}}/{{index}}.json",
    log:
        f"{LOGS}/vectordb_collection/{{chunker}}/{{encoder}}/{{index}}.log",
    benchmark:
        f"{R}/benchmarks/vectordb_collection/{{chunker}}/{{encoder}}/{{index}}.tsv"
    wildcard_constraints:
        index=choice(VECTORDB_BUILDS),
    # the slow start of the dense chain, early: see Priorities in resources.smk
    priority: 9
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 3),
        runtime=60,
    params:
        spec=lambda wildcards: VECTORDB_BUILDS[wildcards.index],
    script:
        "../../scripts/vectordb_collection.py"


# A vector database searched with the cached question vectors: a collection the workflow built, or an existing one.
rule retrieve_vectordb:
    input:
        unpack(vectordb_inputs),
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("retrieve_vectordb")),
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 3),
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        vector_index=lambda wildcards: dict(
            sorted(vars(vectordb_index(wildcards.method)).items())
        ),
        collection=lambda wildcards: METHOD_SPECS[wildcards.method].get("collection"),
    script:
        "../../scripts/retrieve_vectordb.py"


# What the engine's ANN index costs: its recall@k against exact search of the same collection.
rule vectordb_ann_recall:
    input:
        collection=lambda wildcards: vectordb_collection_path(wildcards.method),
        queries=lambda wildcards: query_embeddings_path(
            wildcards.qset,
            METHOD_SPECS[wildcards.method]["encoder"],
            METHOD_SPECS[wildcards.method].get("rewrite"),
        ),
    output:
        recall=f"{R}/{{qset}}/ann-recall/{{method}}.parquet",
        table=f"{R}/{{qset}}/ann-recall/{{method}}.md",
    log:
        f"{LOGS}/vectordb_ann_recall/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/vectordb_ann_recall/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(approximate_vectordb_methods()),
    conda:
        "../../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 3),
    params:
        vector_index=lambda wildcards: dict(
            sorted(vars(vectordb_index(wildcards.method)).items())
        ),
        ks=sorted(set(EVALUATION["ks"]) | {EVALUATION["depth"]}),
    script:
        "../../scripts/vectordb_ann_recall.py"
