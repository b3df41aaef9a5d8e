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
    # short, and what most rerank and fusion methods read: first of the runs, see Priorities in common.smk
    priority: 7
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 2.5),
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        filters=lambda wildcards: sorted(
            METHOD_SPECS[wildcards.method].get("filters", [])
        ),
        prf=lambda wildcards: METHOD_SPECS[wildcards.method].get("prf"),
        backend=lambda wildcards: METHOD_SPECS[wildcards.method].get(
            "backend", DEFAULT_BACKEND
        ),
        numba_cache=f"{R}/cache/numba",
    script:
        "../scripts/retrieve_bm25.py"


# Anserini's SearchCollection over the version's questions: a new version reruns only this, never the index.
rule retrieve_lucene:
    input:
        index=lambda wildcards: lucene_index_path(wildcards.method),
        engine=lambda wildcards: f"{lucene_index_path(wildcards.method)}.engine.json",
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
        method=choice(methods_of_rule("retrieve_lucene")),
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        # The JVM's heap (-Xmx).
        mem_mb=2000,
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        options=lambda wildcards: lucene.search_options(METHOD_SPECS[wildcards.method]),
        analyzer=lambda wildcards: lucene_analyzer(wildcards.method),
        engine=lambda wildcards: LUCENE_ENGINES[wildcards.method],
    script:
        "../scripts/retrieve_lucene.py"


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
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 1.6),
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        index=lambda wildcards: dict(
            sorted(vars(dense_index(wildcards.method)).items())
        ),
        filters=lambda wildcards: sorted(
            METHOD_SPECS[wildcards.method].get("filters", [])
        ),
    script:
        "../scripts/retrieve_dense.py"


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
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        depth=EVALUATION["depth"],
        filters=lambda wildcards: sorted(
            METHOD_SPECS[wildcards.method].get("filters", [])
        ),
    script:
        "../scripts/retrieve_sparse.py"


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
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 1.3),
    params:
        index=lambda wildcards: dict(
            sorted(vars(dense_index(wildcards.method)).items())
        ),
        ks=sorted(set(EVALUATION["ks"]) | {EVALUATION["depth"]}),
    script:
        "../scripts/ann_recall.py"


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
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
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
        "../scripts/retrieve_vectordb.py"


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
        f"{LOGS}/ann_recall/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/ann_recall/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(approximate_vectordb_methods()),
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 3),
    params:
        vector_index=lambda wildcards: dict(
            sorted(vars(vectordb_index(wildcards.method)).items())
        ),
        ks=sorted(set(EVALUATION["ks"]) | {EVALUATION["depth"]}),
    script:
        "../scripts/vectordb_ann_recall.py"


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
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
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
        "../scripts/fuse.py"


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
    # the longest retrieval job (a model's load), first of them: see Priorities in common.smk
    priority: 7
    conda:
        "../../environment.yml"
    threads: rerank_threads
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        depth=lambda wildcards: method_setting(METHOD_SPECS[wildcards.method], "depth"),
        scorer=lambda wildcards: scorer_spec(wildcards.method),
    script:
        "../scripts/rerank.py"


rule import_run:
    input:
        run=lambda wildcards: METHOD_SPECS[wildcards.method]["path"].format(
            qset=wildcards.qset
        ),
        documents=f"{R}/corpus/documents.parquet",
    output:
        run=run_path("{method}"),
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("import_run")),
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
    threads: 1
    params:
        format=lambda wildcards: METHOD_SPECS[wildcards.method]["format"],
        depth=EVALUATION["depth"],
    script:
        "../scripts/import_run.py"


# A search endpoint's answers (`type: http`), through the response cache; the run file's metadata holds the
# endpoint's provenance and each question's latency.
rule search_http:
    input:
        unpack(search_http_inputs),
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("search_http")),
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
    threads: 1
    params:
        spec=lambda wildcards: method_spec(wildcards.method),
        depth=EVALUATION["depth"],
        cache=HTTP_SEARCH_CACHE,
    script:
        "../scripts/search_http.py"
