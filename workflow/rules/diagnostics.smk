# Pages that look into single questions: failure analysis, calibration and abstention, the explorer.
from rankbench.configuration.models import method_cards


rule failure_analysis:
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
        f"{LOGS}/failure_analysis/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/failure_analysis/{{qset}}.tsv"
    # the explorer waits for it too: see evaluate
    priority: 2
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        methods=METHODS,
        specs={m: method_spec(m) for m in METHODS},
        grain=REPORT["grain"],
        k=max(EVALUATION["ks"]),
        relevance_threshold=EVALUATION["relevance_threshold"],
    script:
        in_worker("../scripts/failure_analysis.py")


rule calibrate:
    input:
        runs=expand(run_path("{method}"), method=METHODS, allow_missing=True),
        metrics=expand(f"{R}/{{{{qset}}}}/metrics/{{method}}.parquet", method=METHODS),
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
        question_zones=f"{R}/{{qset}}/calibration/zones.parquet",
        zone_table=f"{R}/{{qset}}/calibration/zone-table.parquet",
    log:
        f"{LOGS}/calibrate/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/calibrate/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        methods=METHODS,
        relevance_threshold=EVALUATION["relevance_threshold"],
        zones=ABSTENTION_ZONES,
        grain=REPORT["grain"],
        k=max(EVALUATION["ks"]),
    script:
        in_worker("../scripts/calibrate.py")


# The per-question explorer: one self-contained HTML page per version (docs/concepts/report.md, "The explorer").
EXPLORER_CHUNKERS = sorted({chunker_of(m) for m in METHODS})


rule explorer:
    input:
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        runs=expand(run_path("{method}"), method=METHODS, allow_missing=True),
        metrics=expand(f"{R}/{{{{qset}}}}/metrics/{{method}}.parquet", method=METHODS),
        chunks=[f"{R}/corpus/{chunker}/chunks.parquet" for chunker in EXPLORER_CHUNKERS],
        qrels=[f"{R}/{{qset}}/qrels/{chunker}.parquet" for chunker in EXPLORER_CHUNKERS],
        failures=f"{R}/{{qset}}/failures.parquet",
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        changed=f"{R}/{{qset}}/since-last-run.parquet",
    output:
        html=report(
            f"{R}/{{qset}}/explorer.html",
            category="Explorer",
            subcategory="{qset}",
            caption="../report/explorer.rst",
        ),
    log:
        f"{LOGS}/explorer/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/explorer/{{qset}}.tsv"
    # the end of the longest chain: see evaluate
    priority: 1
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=mem_mb_for_inputs(2000, 11),
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        dataset=DATASET["name"],
        methods=METHODS,
        specs={m: method_spec(m) for m in METHODS},
        cards=method_cards(EXPANDED_CONFIG),
        chunkers=EXPLORER_CHUNKERS,
        chunker_of={m: chunker_of(m) for m in METHODS},
        ks=EVALUATION["ks"],
        relevance_threshold=EVALUATION["relevance_threshold"],
        baseline=EVALUATION["baseline"],
        report=REPORT,
    script:
        in_worker("../scripts/explorer.py")
