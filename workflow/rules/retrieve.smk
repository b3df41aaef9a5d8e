def corpus_path(method, *parts):
    return "/".join([R, "corpus", chunker_of(method), *parts])


def scorer_encoder(method):
    scorer = config["methods"][method]["scorer"]
    return scorer.get("encoder") if scorer["kind"] == "bi-encoder" else None


rule retrieve_bm25:
    input:
        index=lambda wildcards: corpus_path(wildcards.method, "bm25", f"{wildcards.method}.npz"),
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        run=run_path("{method}"),
    params:
        depth=EVALUATION["depth"],
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("bm25")),
    threads: 1
    resources:
        mem_mb=2000,
    script:
        "../scripts/retrieve_bm25.py"


rule retrieve_dense:
    input:
        index=lambda wildcards: corpus_path(
            wildcards.method, "faiss", f"{config['methods'][wildcards.method]['encoder']}.faiss"
        ),
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        queries=lambda wildcards: f"{R}/{wildcards.qset}/query-embeddings/{config['methods'][wildcards.method]['encoder']}.npy",
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        run=run_path("{method}"),
    params:
        depth=EVALUATION["depth"],
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("dense")),
    threads: 1
    resources:
        mem_mb=2000,
    script:
        "../scripts/retrieve_dense.py"


rule fuse_rrf:
    input:
        runs=lambda wildcards: [run_path(name, wildcards.qset) for name in config["methods"][wildcards.method]["inputs"]],
    output:
        run=run_path("{method}"),
    params:
        k=lambda wildcards: config["methods"][wildcards.method].get("k", 60),
        depth=EVALUATION["depth"],
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("rrf")),
    threads: 1
    script:
        "../scripts/fuse_rrf.py"


def rerank_inputs(wildcards):
    method = wildcards.method
    inputs = {
        "run": run_path(config["methods"][method]["input"], wildcards.qset),
        "questions": f"{R}/{wildcards.qset}/questions.parquet",
        "chunks": corpus_path(method, "chunks.parquet"),
    }
    encoder = scorer_encoder(method)
    if encoder:
        inputs["query_embeddings"] = f"{R}/{wildcards.qset}/query-embeddings/{encoder}.npy"
        inputs["chunk_embeddings"] = corpus_path(method, "embeddings", f"{encoder}.npy")
    return inputs


rule rerank:
    input:
        unpack(rerank_inputs),
    output:
        run=run_path("{method}"),
    params:
        depth=lambda wildcards: config["methods"][wildcards.method].get("depth", 30),
        scorer=lambda wildcards: dict(sorted(config["methods"][wildcards.method]["scorer"].items())),
    log:
        f"logs/{DATASET['name']}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"benchmarks/{DATASET['name']}/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_type("rerank")),
    threads: 1
    resources:
        mem_mb=4000,
    script:
        "../scripts/rerank.py"
