from datetime import datetime, timezone

from rankbench.history import record_run


rule comparison_table:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        pairs=f"{R}/{{qset}}/pairs.parquet",
        tiers=f"{R}/{{qset}}/tiers.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        questions=f"{R}/{{qset}}/questions.parquet",
        validation=f"{R}/{{qset}}/validation.md",
        leaks=f"{R}/{{qset}}/leaks.parquet",
        reranked=lambda wildcards: [
            run_path(m, wildcards.qset) for m in methods_of_type("rerank")
        ],
        unmapped=lambda wildcards: sorted(
            {
                f"{R}/{wildcards.qset}/qrels/{chunker_of(m)}.unmapped.parquet"
                for m in METHODS
            }
        ),
        benchmarks=lambda wildcards: sorted(
            {path for stages in cost_plan(wildcards).values() for _, _, path in stages}
        ),
    output:
        table=f"{R}/{{qset}}/comparison.md",
        html=report(
            f"{R}/{{qset}}/comparison.html",
            category="Comparison",
            subcategory="{qset}",
            caption="../report/comparison.rst",
        ),
        latex=report(
            f"{R}/{{qset}}/comparison.tex",
            category="Comparison",
            subcategory="{qset}",
            caption="../report/latex.rst",
        ),
        csv=report(
            f"{R}/{{qset}}/comparison.csv",
            category="Comparison",
            subcategory="{qset}",
            caption="../report/csv.rst",
        ),
        cost=f"{R}/{{qset}}/cost.md",
        cost_html=report(
            f"{R}/{{qset}}/cost.html",
            category="Comparison",
            subcategory="{qset}",
            caption="../report/cost.rst",
        ),
        record=f"{R}/{{qset}}/history-record.json",
    log:
        f"{LOGS}/comparison_table/{{qset}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset=DATASET["name"],
        evaluation=EVALUATION,
        report=REPORT,
        config_json=lambda wildcards: CONFIG_JSON[wildcards.qset],
        config_sha256=lambda wildcards: CONFIG_SHA256[wildcards.qset],
        method_types={m: METHOD_SPECS[m]["type"] for m in METHODS},
        reranked_methods=methods_of_type("rerank"),
        cost_plan=cost_plan,
        judge_agreement=lambda wildcards: judge_agreement_path(wildcards.qset),
    script:
        "../scripts/comparison_table.py"


rule plots:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        grades=expand(f"{R}/{{{{qset}}}}/grades/{{method}}.parquet", method=METHODS),
    output:
        **figure_outputs(),
    log:
        f"{LOGS}/plots/{{qset}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        methods=METHODS,
        grain=REPORT["grain"],
        headline=REPORT["headline"],
        plot_metric=REPORT["plot_metric"],
    script:
        "../scripts/draw_plots.py"


rule failures:
    input:
        runs=expand(run_path("{method}"), method=METHODS, allow_missing=True),
        qrels=lambda wildcards: [qrels_of(m, wildcards.qset) for m in METHODS],
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.parquet",
        documents=f"{R}/corpus/documents.parquet",
    output:
        markdown=f"{R}/{{qset}}/failures.md",
        html=report(
            f"{R}/{{qset}}/failures.html",
            category="Failures",
            subcategory="{qset}",
            caption="../report/failures.rst",
        ),
        failures=f"{R}/{{qset}}/failures.parquet",
        stages=f"{R}/{{qset}}/stages.parquet",
    log:
        f"{LOGS}/failures/{{qset}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        methods=METHODS,
        specs={m: method_spec(m) for m in METHODS},
        grain=REPORT["grain"],
        k=max(EVALUATION["ks"]),
        relevance_threshold=EVALUATION["relevance_threshold"],
    script:
        "../scripts/failure_analysis.py"


rule calibration:
    input:
        runs=expand(run_path("{method}"), method=METHODS, allow_missing=True),
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.parquet",
    output:
        markdown=f"{R}/{{qset}}/calibration.md",
        html=report(
            f"{R}/{{qset}}/calibration.html",
            category="Calibration",
            subcategory="{qset}",
            caption="../report/calibration.rst",
        ),
        png=report(
            f"{R}/{{qset}}/plots/calibration.png",
            category="Calibration",
            subcategory="{qset}",
            caption="../report/calibration_plot.rst",
        ),
        svg=f"{R}/{{qset}}/plots/calibration.svg",
        top1=f"{R}/{{qset}}/calibration/top1.parquet",
        thresholds=f"{R}/{{qset}}/calibration/thresholds.parquet",
    log:
        f"{LOGS}/calibration/{{qset}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        methods=METHODS,
        relevance_threshold=EVALUATION["relevance_threshold"],
    script:
        "../scripts/calibrate.py"


rule qset_diff:
    input:
        questions_a=f"{R}/{{a}}/questions.parquet",
        labels_a=f"{R}/{{a}}/labels.parquet",
        manifest_a=f"{R}/{{a}}/qset.json",
        metrics_a=expand(f"{R}/{{{{a}}}}/metrics/{{method}}.parquet", method=METHODS),
        questions_b=f"{R}/{{b}}/questions.parquet",
        labels_b=f"{R}/{{b}}/labels.parquet",
        manifest_b=f"{R}/{{b}}/qset.json",
        metrics_b=expand(f"{R}/{{{{b}}}}/metrics/{{method}}.parquet", method=METHODS),
    output:
        markdown=f"{R}/diffs/{{a}}-vs-{{b}}.md",
        html=report(
            f"{R}/diffs/{{a}}-vs-{{b}}.html",
            category="Question-set diffs",
            caption="../report/diff.rst",
        ),
        summary=f"{R}/diffs/{{a}}-vs-{{b}}.json",
        changes=f"{R}/diffs/{{a}}-vs-{{b}}.changes.parquet",
    log:
        f"{LOGS}/qset_diff/{{a}}-vs-{{b}}.log",
    wildcard_constraints:
        a=choice(QSETS),
        b=choice(QSETS),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        methods=METHODS,
        grain=REPORT["grain"],
        headline=REPORT["headline"],
        ks=EVALUATION["ks"],
    script:
        "../scripts/diff_qsets.py"


onsuccess:
    record_run(
        {qset: f"{R}/{qset}/history-record.json" for qset in QSETS},
        CONFIG_SHA256,
        HISTORY,
        DATASET["name"],
        "{}@{}".format(*REPORT["plot_metric"]),
        {
            "markdown": f"{R}/history.md",
            "png": f"{R}/history.png",
            "svg": f"{R}/history.svg",
        },
        datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
