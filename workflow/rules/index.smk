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
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
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
        "../scripts/bm25_index.py"


# Lucene's index of the chunks (a folder, as Lucene writes it), built by Anserini once per (chunker, analyzer, jar).
rule lucene_index:
    input:
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
    output:
        index=directory(f"{R}/corpus/{{chunker}}/lucene/{{method}}"),
        engine=f"{R}/corpus/{{chunker}}/lucene/{{method}}.engine.json",
    log:
        f"{LOGS}/lucene_index/{{chunker}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/lucene_index/{{chunker}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(
            {lucene_index_name(m) for m in methods_indexed_by("lucene_index")}
        ),
    # every run before the evaluation that waits for it: see Priorities in common.smk
    priority: 6
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        # The JVM's heap (-Xmx).
        mem_mb=4000,
        runtime=120,
    params:
        analyzer=lambda wildcards: lucene_analyzer(wildcards.method),
        engine=lambda wildcards: LUCENE_ENGINES[wildcards.method],
    script:
        "../scripts/lucene_index.py"


rule embed_corpus:
    input:
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    output:
        embeddings=temp(
            f"{R}/corpus/{{chunker}}/embeddings/{{encoder}}/shard-{{shard}}.npy"
        ),
        # Texts sent and tokens billed (an API encoder's cost, on cost.md).
        usage=f"{R}/benchmarks/embed_corpus/{{chunker}}/{{encoder}}/shard-{{shard}}.usage.json",
    log:
        f"{LOGS}/embed_corpus/{{chunker}}/{{encoder}}/shard-{{shard}}.log",
    benchmark:
        f"{R}/benchmarks/embed_corpus/{{chunker}}/{{encoder}}/shard-{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    # the slow start of the dense chain, early: see Priorities in common.smk
    priority: 9
    conda:
        "../../environment.yml"
    threads: encoding_threads
    resources:
        mem_mb=mem_mb_for_inputs(4000, 9),
        runtime=120,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
        shards=lambda wildcards: encoder_shards(wildcards.encoder),
        # Read if present, never declared: written by merge_embeddings, it only saves work (see docs/how-to/large-corpora.md).
        cache=lambda wildcards: embedding_cache(wildcards.chunker, wildcards.encoder),
        # the other chunkers' caches of the same encoder: a text any chunker embedded is not encoded again
        other_caches=lambda wildcards: [
            embedding_cache(chunker, wildcards.encoder)
            for chunker in sorted(config["chunkers"])
            if chunker != wildcards.chunker
        ],
        api_cache=API_EMBEDDING_CACHE,
    script:
        "../scripts/embed_corpus.py"


rule merge_embeddings:
    input:
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
        shards=lambda wildcards: [
            f"{R}/corpus/{wildcards.chunker}/embeddings/{wildcards.encoder}/shard-{shard}.npy"
            for shard in range(encoder_shards(wildcards.encoder))
        ],
    output:
        embeddings=f"{R}/corpus/{{chunker}}/embeddings/{{encoder}}.npy",
    log:
        f"{LOGS}/merge_embeddings/{{chunker}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/merge_embeddings/{{chunker}}/{{encoder}}.tsv"
    # the slow start of the dense chain, early: see Priorities in common.smk
    priority: 9
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(4000, 2),
        runtime=30,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
        cache=lambda wildcards: embedding_cache(wildcards.chunker, wildcards.encoder),
    script:
        "../scripts/merge_embeddings.py"


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
    # the slow start of the dense chain, early: see Priorities in common.smk
    priority: 9
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 2.2),
        runtime=60,
    params:
        spec=lambda wildcards: FAISS_BUILDS[wildcards.index],
    script:
        "../scripts/faiss_index.py"


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
    # the slow start of the dense chain, early: see Priorities in common.smk
    priority: 9
    conda:
        "../../environment.yml"
    threads: encoding_threads
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
    script:
        "../scripts/sparse_index.py"


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
    # the slow start of the dense chain, early: see Priorities in common.smk
    priority: 9
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 3),
        runtime=60,
    params:
        spec=lambda wildcards: VECTORDB_BUILDS[wildcards.index],
    script:
        "../scripts/vectordb_collection.py"
