rule prepare_questions:
    input:
        files=qset_files,
        documents=f"{R}/corpus/documents.parquet",
        schema=SCHEMAS / "questions.schema.yaml",
    output:
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        validation=f"{R}/{{qset}}/validation.md",
    log:
        f"{LOGS}/prepare_questions/{{qset}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        format=DATASET["format"],
        expected_sha256=lambda wildcards: LOCK.get(wildcards.qset),
        lock=DATASET.get("lock", ""),
    script:
        "../scripts/prepare_questions.py"


rule embed_queries:
    input:
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        embeddings=f"{R}/{{qset}}/query-embeddings/{{encoder}}.npy",
    log:
        f"{LOGS}/embed_queries/{{qset}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/embed_queries/{{qset}}/{{encoder}}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
    script:
        "../scripts/embed_queries.py"


rule qrels:
    input:
        labels=f"{R}/{{qset}}/labels.parquet",
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    output:
        qrels=f"{R}/{{qset}}/qrels/{{chunker}}.parquet",
        unmapped=f"{R}/{{qset}}/qrels/{{chunker}}.unmapped.parquet",
    log:
        f"{LOGS}/qrels/{{qset}}/{{chunker}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    script:
        "../scripts/qrels.py"


rule prepare_rewrites:
    input:
        rewrites=lambda wildcards: config["qsets"][wildcards.qset]["rewrites"][
            wildcards.rewrite
        ],
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        queries=f"{R}/{{qset}}/rewrites/{{rewrite}}.parquet",
    log:
        f"{LOGS}/prepare_rewrites/{{qset}}/{{rewrite}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        lock_key=lambda wildcards: rewrite_lock_key(wildcards.qset, wildcards.rewrite),
        expected_sha256=lambda wildcards: LOCK.get(
            rewrite_lock_key(wildcards.qset, wildcards.rewrite)
        ),
        lock=DATASET.get("lock", ""),
    script:
        "../scripts/prepare_rewrites.py"


rule embed_rewritten_queries:
    input:
        questions=f"{R}/{{qset}}/rewrites/{{rewrite}}.parquet",
    output:
        embeddings=f"{R}/{{qset}}/query-embeddings/{{rewrite}}/{{encoder}}.npy",
    log:
        f"{LOGS}/embed_queries/{{qset}}/{{rewrite}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/embed_queries/{{qset}}/{{rewrite}}/{{encoder}}.tsv"
    conda:
        "../../environment.yml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
    script:
        "../scripts/embed_queries.py"
