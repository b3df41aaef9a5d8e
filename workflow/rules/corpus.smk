from rankbench.configuration.dataset_formats import corpus_files, corpus_source
from rankbench.io.expansions import expansion_lock_key, expansion_record
from rankbench.io.loaders import SCHEMA_FOLDER


rule load_corpus:
    input:
        corpus=corpus_files(config),
        schema=SCHEMA_FOLDER / "corpus.schema.yaml",
    output:
        documents=f"{R}/corpus/documents.parquet",
    log:
        f"{LOGS}/load_corpus.log",
    benchmark:
        f"{R}/benchmarks/load_corpus.tsv"
    # the start of the longest chain (the corpus embedding): see Priorities in resources.smk
    priority: 20
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 4.6),
    params:
        format=DATASET["format"],
        source=corpus_source(config),
    script:
        in_worker("../scripts/load_corpus.py")


rule chunk:
    input:
        documents=f"{R}/corpus/documents.parquet",
    output:
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    log:
        f"{LOGS}/chunk/{{chunker}}.log",
    benchmark:
        f"{R}/benchmarks/chunk/{{chunker}}.tsv"
    wildcard_constraints:
        chunker=choice(config["chunkers"]),
    # the start of the longest chain (the corpus embedding): see Priorities in resources.smk
    priority: 20
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 17.5),
    params:
        spec=lambda wildcards: chunk_settings(config["chunkers"][wildcards.chunker]),
        # [method, index block] of each index a method type builds over these chunks (INDEX_BLOCKS)
        indexes=lambda wildcards: [
            [m, INDEX_BLOCKS[m]]
            for m in sorted(INDEX_BLOCKS)
            if index_chunker(m).split("~")[0] == wildcards.chunker
        ],
    script:
        in_worker("../scripts/chunk.py")


# A chunker's chunks with a document expansion appended (dataset.expansions): what the BM25 and dense indexes of
# the methods naming the expansion are built from; same chunk ids and order, so their runs rank the plain chunks.
rule expand_chunks:
    input:
        chunks=f"{R}/corpus/{{base}}/chunks.parquet",
        documents=f"{R}/corpus/documents.parquet",
        expansion=lambda wildcards: EXPANSIONS[wildcards.expansion],
    output:
        chunks=f"{R}/corpus/{{base}}~{{expansion}}/chunks.parquet",
    log:
        f"{LOGS}/expand_chunks/{{base}}~{{expansion}}.log",
    benchmark:
        f"{R}/benchmarks/expand_chunks/{{base}}~{{expansion}}.tsv"
    wildcard_constraints:
        base=choice(config["chunkers"]),
        expansion=choice(EXPANSIONS),
    # the start of the longest chain (the corpus embedding): see Priorities in resources.smk
    priority: 20
    conda:
        "../../environment.yml"
    threads: 1
    params:
        lock_key=lambda wildcards: expansion_lock_key(wildcards.expansion),
        expected_sha256=lambda wildcards: LOCK.get(
            expansion_lock_key(wildcards.expansion)
        ),
        lock=DATASET.get("lock", ""),
        record=lambda wildcards: str(expansion_record(R, wildcards.expansion)),
    script:
        in_worker("../scripts/expand_chunks.py")


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
    # the longest chain's start, with the chunks: see Priorities in resources.smk
    priority: 20
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
        in_worker("../scripts/embed_corpus.py", worker="model")


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
    # the slow start of the dense chain, early: see Priorities in resources.smk
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
        in_worker("../scripts/merge_embeddings.py")
