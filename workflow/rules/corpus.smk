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
    # the start of the longest chain (the corpus embedding): see Priorities in common.smk
    priority: 20
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 3),
    params:
        format=DATASET["format"],
        source=corpus_source(config),
    script:
        "../scripts/load_corpus.py"


rule chunk:
    input:
        documents=f"{R}/corpus/documents.parquet",
    output:
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    log:
        f"{LOGS}/chunk/{{chunker}}.log",
    benchmark:
        f"{R}/benchmarks/chunk/{{chunker}}.tsv"
    # the start of the longest chain (the corpus embedding): see Priorities in common.smk
    priority: 20
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 14),
    params:
        spec=lambda wildcards: chunker_settings(config["chunkers"][wildcards.chunker]),
    script:
        "../scripts/chunk.py"
