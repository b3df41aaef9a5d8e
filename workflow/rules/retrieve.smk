rule retrieve_bm25:
    input:
        index=lambda wildcards: corpus_path(
            wildcards.method, "bm25", f"{wildcards.method}.npz"
        ),
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        run=run_path("{method}"),
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("bm25")),
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        depth=EVALUATION["depth"],
    script:
        "../scripts/retrieve_bm25.py"


rule retrieve_dense:
    input:
        index=lambda wildcards: corpus_path(
            wildcards.method,
            "faiss",
            f"{config['methods'][wildcards.method]['encoder']}.faiss",
        ),
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        queries=lambda wildcards: f"{R}/{wildcards.qset}/query-embeddings/{config['methods'][wildcards.method]['encoder']}.npy",
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        run=run_path("{method}"),
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("dense")),
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
    params:
        depth=EVALUATION["depth"],
    script:
        "../scripts/retrieve_dense.py"


rule fuse_rrf:
    input:
        runs=lambda wildcards: [
            run_path(name, wildcards.qset)
            for name in config["methods"][wildcards.method]["inputs"]
        ],
    output:
        run=run_path("{method}"),
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("rrf")),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        k=lambda wildcards: config["methods"][wildcards.method].get("k", 60),
        depth=EVALUATION["depth"],
    script:
        "../scripts/fuse_rrf.py"


rule rerank:
    input:
        unpack(rerank_inputs),
    output:
        run=run_path("{method}"),
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("rerank")),
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        depth=lambda wildcards: config["methods"][wildcards.method].get("depth", 30),
        scorer=lambda wildcards: dict(
            sorted(config["methods"][wildcards.method]["scorer"].items())
        ),
    script:
        "../scripts/rerank.py"


rule import_run:
    input:
        run=lambda wildcards: config["methods"][wildcards.method]["path"].format(
            qset=wildcards.qset
        ),
    output:
        run=run_path("{method}"),
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    wildcard_constraints:
        method=choice(methods_of_type("external")),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        format=lambda wildcards: config["methods"][wildcards.method]["format"],
        depth=EVALUATION["depth"],
    script:
        "../scripts/import_run.py"
