rule load_corpus:
    input:
        corpus=corpus_file(),
        schema=SCHEMAS / "corpus.schema.yaml",
    output:
        documents=f"{R}/corpus/documents.parquet",
    params:
        format=DATASET["format"],
    log:
        f"logs/{DATASET['name']}/load_corpus.log",
    threads: 1
    script:
        "../scripts/load_corpus.py"


rule chunk:
    input:
        documents=f"{R}/corpus/documents.parquet",
    output:
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    params:
        spec=lambda wildcards: dict(sorted(config["chunkers"][wildcards.chunker].items())),
    log:
        f"logs/{DATASET['name']}/chunk/{{chunker}}.log",
    threads: 1
    script:
        "../scripts/chunk.py"
