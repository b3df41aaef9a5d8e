# How sure the comparison is (issue 15): the question budget and robustness to unjudged results.


# How sure is the table: question budget (issue 15).
rule plan_budget:
    input:
        metrics=expand(f"{R}/{{{{qset}}}}/metrics/{{method}}.parquet", method=METHODS),
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
    output:
        markdown=f"{R}/{{qset}}/budget.md",
        html=report(
            f"{R}/{{qset}}/budget.html",
            category="How sure",
            subcategory="{qset}",
            caption="../report/budget.rst",
        ),
        budget=f"{R}/{{qset}}/budget.parquet",
    log:
        f"{LOGS}/plan_budget/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/plan_budget/{{qset}}.tsv"
    # on the longest chain (aggregate, budget, comparison page): see Priorities in resources.smk
    priority: 1
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        dataset=DATASET["name"],
        methods=METHODS,
        grain=REPORT["grain"],
        headline=REPORT["headline"],
        baseline=EVALUATION["baseline"],
        alpha=REPORT["alpha"],
        seed=EVALUATION["seed"],
    script:
        in_worker("../scripts/plan_budget.py")


rule robustness:
    input:
        runs=expand(run_path("{method}"), method=METHODS, allow_missing=True),
        qrels=lambda wildcards: [qrels_of(m, wildcards.qset) for m in METHODS],
    output:
        markdown=f"{R}/{{qset}}/robustness.md",
        html=report(
            f"{R}/{{qset}}/robustness.html",
            category="How sure",
            subcategory="{qset}",
            caption="../report/robustness.rst",
        ),
        survival=f"{R}/{{qset}}/robustness.parquet",
        bounds=f"{R}/{{qset}}/robustness-bounds.parquet",
        corrected=f"{R}/{{qset}}/judge-corrected.parquet",
    log:
        f"{LOGS}/robustness/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/robustness/{{qset}}.tsv"
    # the longest job, before the short ones: see evaluate
    priority: 1
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        dataset=DATASET["name"],
        methods=METHODS,
        grain=REPORT["grain"],
        headline=REPORT["headline"],
        baseline=EVALUATION["baseline"],
        alpha=REPORT["alpha"],
        relevance_threshold=EVALUATION["relevance_threshold"],
        gain=EVALUATION["gain"],
        seed=EVALUATION["seed"],
        grains={m: method_grains(METHOD_SPECS[m]) for m in METHODS},
        judgements=lambda wildcards: judge_output_path(
            wildcards.qset, "judgements.parquet"
        ),
    script:
        in_worker("../scripts/robustness.py")
