# Method type lucene: Anserini's index and its runs; helpers in lucene_common.smk.


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
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 2
    resources:
        # The JVM's heap (-Xmx).
        mem_mb=4000,
        runtime=120,
    params:
        analyzer=lambda wildcards: lucene_analyzer(wildcards.method),
        engine=lambda wildcards: LUCENE_ENGINES[wildcards.method],
    script:
        "../../scripts/lucene_index.py"


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
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
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
        "../../scripts/retrieve_lucene.py"
