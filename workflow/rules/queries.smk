from rankbench.configuration.dataset_formats import version_source
from rankbench.io.frozen import rewrite_lock_key
from rankbench.io.loaders import SCHEMA_FOLDER

# Chunkers whose qrels some method is scored against: validation reports labels each of them loses.
LABEL_CHUNKERS = sorted({chunker_of(m) for m in METHODS})


# From the question-set files alone, so that editing the corpus never re-embeds the questions.
rule prepare_questions:
    input:
        files=qset_files,
        schema=SCHEMA_FOLDER / "questions.schema.yaml",
    output:
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.unchecked.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
    log:
        f"{LOGS}/prepare_questions/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/prepare_questions/{{qset}}.tsv"
    # before every other job of its version: see Priorities in resources.smk
    priority: 10
    conda:
        "../../environment.yml"
    threads: 1
    params:
        format=DATASET["format"],
        source=lambda wildcards: version_source(config, wildcards.qset),
        # not whether the version is a draft: freezing it unchanged reruns nothing (the job reads the lock)
        lock=DATASET.get("lock", ""),
        audience=REPORT["audience"],
    script:
        in_worker("../scripts/prepare_questions.py")


# Everything that reads labels.parquet (qrels, hence evaluation and pages) waits for this check.
rule validate_labels:
    input:
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.unchecked.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        documents=f"{R}/corpus/documents.parquet",
        chunks=[f"{R}/corpus/{chunker}/chunks.parquet" for chunker in LABEL_CHUNKERS],
    output:
        labels=f"{R}/{{qset}}/labels.parquet",
        validation=f"{R}/{{qset}}/validation.md",
    log:
        f"{LOGS}/validate_labels/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/validate_labels/{{qset}}.tsv"
    # Ready with the first embedding jobs (both wait for the chunks): a label error must stop the run before them.
    priority: 100
    conda:
        "../../environment.yml"
    threads: 1
    params:
        chunkers=LABEL_CHUNKERS,
    script:
        in_worker("../scripts/validate_labels.py")


rule embed_queries:
    input:
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        embeddings=f"{R}/{{qset}}/query-embeddings/{{encoder}}.npy",
        usage=f"{R}/benchmarks/embed_queries/{{qset}}/{{encoder}}.usage.json",
        timing=f"{R}/timings/embed_queries/{{qset}}/{{encoder}}.json",
    log:
        f"{LOGS}/embed_queries/{{qset}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/embed_queries/{{qset}}/{{encoder}}.tsv"
    # 2 threads (1 for some encoders and inputs): above any two 1-thread jobs, or it never finds both cores free (see
    # Priorities in common.smk)
    priority: 19
    conda:
        "../../environment.yml"
    threads: question_encoding_threads
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
        # Read if present, never declared: vectors of questions already encoded, shared by every version.
        cache=lambda wildcards: query_embedding_cache(wildcards.encoder),
        api_cache=API_EMBEDDING_CACHE,
    script:
        in_worker("../scripts/embed_queries.py", worker="model")


# The qrels of every grain, in Parquet and as TREC files (so an exported run can be scored with trec_eval, ranx or
# ir_measures).
rule qrels:
    input:
        labels=f"{R}/{{qset}}/labels.parquet",
        chunks=f"{R}/corpus/{{chunker}}/chunks.parquet",
    output:
        qrels=f"{R}/{{qset}}/qrels/{{chunker}}.parquet",
        unmapped=f"{R}/{{qset}}/qrels/{{chunker}}.unmapped.parquet",
        docs=f"{R}/{{qset}}/qrels/{{chunker}}.docs.qrels",
        chunks=f"{R}/{{qset}}/qrels/{{chunker}}.chunks.qrels",
    log:
        f"{LOGS}/qrels/{{qset}}/{{chunker}}.log",
    benchmark:
        f"{R}/benchmarks/qrels/{{qset}}/{{chunker}}.tsv"
    # every input of the evaluation before it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../environment.yml"
    threads: 1
    script:
        in_worker("../scripts/qrels.py")


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
    benchmark:
        f"{R}/benchmarks/prepare_rewrites/{{qset}}/{{rewrite}}.tsv"
    # before every other job of its version: see Priorities in resources.smk
    priority: 10
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
        in_worker("../scripts/prepare_rewrites.py")


rule embed_rewritten_queries:
    input:
        questions=f"{R}/{{qset}}/rewrites/{{rewrite}}.parquet",
    output:
        embeddings=f"{R}/{{qset}}/query-embeddings/{{rewrite}}/{{encoder}}.npy",
        usage=f"{R}/benchmarks/embed_queries/{{qset}}/{{rewrite}}/{{encoder}}.usage.json",
        timing=f"{R}/timings/embed_queries/{{qset}}/{{rewrite}}/{{encoder}}.json",
    log:
        f"{LOGS}/embed_queries/{{qset}}/{{rewrite}}/{{encoder}}.log",
    benchmark:
        f"{R}/benchmarks/embed_queries/{{qset}}/{{rewrite}}/{{encoder}}.tsv"
    # 2 threads (1 for some encoders and inputs): above any two 1-thread jobs, or it never finds both cores free (see
    # Priorities in common.smk)
    priority: 19
    conda:
        "../../environment.yml"
    threads: question_encoding_threads
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        encoder=lambda wildcards: encoder_spec(wildcards.encoder),
        # Read if present, never declared: vectors of questions already encoded, shared by every version.
        cache=lambda wildcards: query_embedding_cache(wildcards.encoder),
        api_cache=API_EMBEDDING_CACHE,
    script:
        in_worker("../scripts/embed_queries.py", worker="model")
