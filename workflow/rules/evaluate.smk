# Everything made from one run, in one job (one process instead of three; the same inputs decide when each reruns):
# its metrics and grades; its TREC files, named by grain (chunk ids score against chunk qrels only, document ids
# against the dataset's own qrels; the method's own scores; its ir_metadata (PRIMAD) is the YAML file beside them);
# and its leak counts. A changed evaluation key (relevance_threshold, gain, metrics) rewrites identical TREC files
# and leak counts.
rule evaluate:
    input:
        run=run_path("{method}"),
        questions=f"{R}/{{qset}}/questions.parquet",
        qrels=lambda wildcards: f"{R}/{wildcards.qset}/qrels/{chunker_of(wildcards.method)}.parquet",
        chunks=lambda wildcards: corpus_path(wildcards.method, "chunks.parquet"),
        documents=f"{R}/corpus/documents.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        labels=f"{R}/{{qset}}/labels.parquet",
    output:
        metrics=f"{R}/{{qset}}/metrics/{{method}}.parquet",
        evidence=f"{R}/{{qset}}/evidence/{{method}}.parquet",
        grades=f"{R}/{{qset}}/grades/{{method}}.parquet",
        leaks=f"{R}/{{qset}}/leaks/{{method}}.parquet",
        chunks=f"{R}/{{qset}}/runs/{{method}}.chunks.trec",
        docs=f"{R}/{{qset}}/runs/{{method}}.docs.trec",
        metadata=f"{R}/{{qset}}/runs/{{method}}.ir_metadata.yaml",
    log:
        f"{LOGS}/evaluate/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/evaluate/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_at_grain("chunk")),
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
        tokenizer=PROMPT_TOKENIZER[0],
        grains=lambda wildcards: method_grains(METHOD_SPECS[wildcards.method]),
        spec=lambda wildcards: method_spec(wildcards.method),
        dataset=DATASET["name"],
    script:
        in_worker("../scripts/evaluate.py")


# External runs rank documents: they have no chunk grain, hence no chunk TREC file.
use rule evaluate as evaluate_documents with:
    output:
        metrics=f"{R}/{{qset}}/metrics/{{method}}.parquet",
        grades=f"{R}/{{qset}}/grades/{{method}}.parquet",
        leaks=f"{R}/{{qset}}/leaks/{{method}}.parquet",
        docs=f"{R}/{{qset}}/runs/{{method}}.docs.trec",
        metadata=f"{R}/{{qset}}/runs/{{method}}.ir_metadata.yaml",
    benchmark:
        f"{R}/benchmarks/evaluate_documents/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(set(METHODS) - set(methods_at_grain("chunk"))),


# The version's tables, and its leak summary: the leak counts come from the jobs that write the metrics, so the
# summary reruns with the aggregate (a changed bootstrap or headline key rewrites an identical leaks.parquet).
rule aggregate:
    input:
        metrics=expand(f"{R}/{{{{qset}}}}/metrics/{{method}}.parquet", method=METHODS),
        questions=f"{R}/{{qset}}/questions.parquet",
        leaks=expand(f"{R}/{{{{qset}}}}/leaks/{{method}}.parquet", method=METHODS),
        evidence=expand(
            f"{R}/{{{{qset}}}}/evidence/{{method}}.parquet",
            method=methods_at_grain("chunk"),
        ),
    output:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        evidence=f"{R}/{{qset}}/evidence.parquet",
        pairs=f"{R}/{{qset}}/pairs.parquet",
        tiers=f"{R}/{{qset}}/tiers.parquet",
        leaks=f"{R}/{{qset}}/leaks.parquet",
        breakdowns=f"{R}/{{qset}}/breakdowns.parquet",
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
        chunk_methods=methods_at_grain("chunk"),
        resamples=EVALUATION["bootstrap_resamples"],
        seed=EVALUATION["seed"],
        baseline=EVALUATION["baseline"],
        margins=MARGINS,
        headline=REPORT["headline"],
        alpha=REPORT["alpha"],
    script:
        in_worker("../scripts/aggregate.py")
