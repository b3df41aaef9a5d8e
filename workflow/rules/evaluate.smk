rule evaluate:
    input:
        run=run_path("{method}"),
        questions=f"{R}/{{qset}}/questions.parquet",
        qrels=lambda wildcards: f"{R}/{wildcards.qset}/qrels/{chunker_of(wildcards.method)}.parquet",
    output:
        metrics=f"{R}/{{qset}}/metrics/{{method}}.parquet",
        grades=f"{R}/{{qset}}/grades/{{method}}.parquet",
    log:
        f"{LOGS}/evaluate/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(METHODS),
    # Report jobs by priority: the longest chain (evaluate, aggregate, explorer, about a third of the report's CPU
    # at 1M passages) in its order, then the long robustness; started last, the chain ran alone at the end.
    priority: 3
    conda:
        "../../environment.yml"
    threads: 1
    params:
        ks=EVALUATION["ks"],
        relevance_threshold=EVALUATION["relevance_threshold"],
        gain=EVALUATION["gain"],
        extra_metrics=EVALUATION["metrics"],
        rbp_p=EVALUATION["rbp_p"],
        grains=lambda wildcards: method_grains(METHOD_SPECS[wildcards.method]),
    script:
        "../scripts/evaluate.py"


rule aggregate:
    input:
        metrics=expand(f"{R}/{{{{qset}}}}/metrics/{{method}}.parquet", method=METHODS),
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        pairs=f"{R}/{{qset}}/pairs.parquet",
        tiers=f"{R}/{{qset}}/tiers.parquet",
    log:
        f"{LOGS}/aggregate/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/aggregate/{{qset}}.tsv"
    # on the longest chain: see evaluate
    priority: 2
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset=DATASET["name"],
        methods=METHODS,
        resamples=EVALUATION["bootstrap_resamples"],
        seed=EVALUATION["seed"],
        baseline=EVALUATION["baseline"],
        headline=REPORT["headline"],
        alpha=REPORT["alpha"],
    script:
        "../scripts/aggregate.py"


# TREC files named by grain: chunk ids score against chunk qrels only, document ids against the dataset's own qrels.
# Scores are the method's own; the run's ir_metadata (PRIMAD) is the YAML file beside them.
rule export_trec:
    input:
        run=run_path("{method}"),
        documents=f"{R}/corpus/documents.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
    output:
        chunks=f"{R}/{{qset}}/runs/{{method}}.chunks.trec",
        docs=f"{R}/{{qset}}/runs/{{method}}.docs.trec",
        metadata=f"{R}/{{qset}}/runs/{{method}}.ir_metadata.yaml",
    log:
        f"{LOGS}/export_trec/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/export_trec/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_at_grain("chunk")),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        spec=lambda wildcards: method_spec(wildcards.method),
        dataset=DATASET["name"],
    script:
        "../scripts/export_trec.py"


# External runs rank documents: they have no chunk grain.
rule export_trec_documents:
    input:
        run=run_path("{method}"),
        documents=f"{R}/corpus/documents.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
    output:
        docs=f"{R}/{{qset}}/runs/{{method}}.docs.trec",
        metadata=f"{R}/{{qset}}/runs/{{method}}.ir_metadata.yaml",
    log:
        f"{LOGS}/export_trec/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/export_trec_documents/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(set(METHODS) - set(methods_at_grain("chunk"))),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        spec=lambda wildcards: method_spec(wildcards.method),
        dataset=DATASET["name"],
    script:
        "../scripts/export_trec.py"


rule leaks:
    input:
        run=run_path("{method}"),
        questions=f"{R}/{{qset}}/questions.parquet",
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
    output:
        leaks=f"{R}/{{qset}}/leaks/{{method}}.parquet",
    log:
        f"{LOGS}/leaks/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/leaks/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(METHODS),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        ks=EVALUATION["ks"],
    script:
        "../scripts/leaks.py"


rule leak_summary:
    input:
        leaks=expand(f"{R}/{{{{qset}}}}/leaks/{{method}}.parquet", method=METHODS),
    output:
        summary=f"{R}/{{qset}}/leaks.parquet",
    log:
        f"{LOGS}/leak_summary/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/leak_summary/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        methods=METHODS,
    script:
        "../scripts/leak_summary.py"


# The qrels of every grain as TREC files, so an exported run can be scored with trec_eval, ranx or ir_measures.
rule export_qrels:
    input:
        qrels=f"{R}/{{qset}}/qrels/{{chunker}}.parquet",
    output:
        docs=f"{R}/{{qset}}/qrels/{{chunker}}.docs.qrels",
        chunks=f"{R}/{{qset}}/qrels/{{chunker}}.chunks.qrels",
    log:
        f"{LOGS}/export_qrels/{{qset}}/{{chunker}}.log",
    benchmark:
        f"{R}/benchmarks/export_qrels/{{qset}}/{{chunker}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    script:
        "../scripts/export_qrels.py"
