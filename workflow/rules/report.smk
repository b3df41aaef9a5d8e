rule comparison_table:
    input:
        unpack(how_sure_inputs),
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        pairs=f"{R}/{{qset}}/pairs.parquet",
        tiers=f"{R}/{{qset}}/tiers.parquet",
        zone_table=lambda wildcards: zones_input(wildcards, "zone-table.parquet"),
        breakdowns=f"{R}/{{qset}}/breakdowns.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        questions=f"{R}/{{qset}}/questions.parquet",
        validation=f"{R}/{{qset}}/validation.md",
        leaks=f"{R}/{{qset}}/leaks.parquet",
        evidence=f"{R}/{{qset}}/evidence.parquet",
        labels=f"{R}/{{qset}}/labels.parquet",
        documents=f"{R}/corpus/documents.parquet",
        effective_config=f"{R}/{{qset}}/effective-config.yaml",
        reranked=lambda wildcards: [
            run_path(m, wildcards.qset) for m in RERANKED_METHODS
        ],
        since_last_run=f"{R}/{{qset}}/since-last-run.md",
        engine_runs=engine_runs,
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
    log:
        f"{LOGS}/comparison_table/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/comparison_table/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        dataset=DATASET["name"],
        evaluation=EVALUATION,
        report=REPORT,
        config_json=lambda wildcards: CONFIG_JSON[wildcards.qset],
        config_sha256=lambda wildcards: CONFIG_SHA256[wildcards.qset],
        method_types={m: METHOD_SPECS[m]["type"] for m in METHODS},
        method_inputs={m: method_inputs(METHOD_SPECS[m]) for m in METHODS},
        decision=DECISION,
        chunkers={m: chunker_of(m) for m in methods_at_grain("chunk")},
        tokenizer=PROMPT_TOKENIZER[1],
        cards=method_cards(EXPANDED_CONFIG),
        reranked_methods=RERANKED_METHODS,
        models=resolved_models(),
        engine_methods=engine_methods(),
        judge_agreement=lambda wildcards: judge_output_path(
            wildcards.qset, "agreement.parquet"
        ),
        quick=QUICK,
        zones=ABSTENTION_ZONES,
    script:
        "../scripts/comparison_table.py"


# Cost beside quality: this run's seconds per question and one-time seconds (and API tokens) per method, apart from
# the comparison page, which stays byte-identical across runs apart from its date.
rule cost_page:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        pairs=f"{R}/{{qset}}/pairs.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        questions=f"{R}/{{qset}}/questions.parquet",
        benchmarks=lambda wildcards: sorted(
            {path for stages in cost_plan(wildcards).values() for _, _, path in stages}
        ),
        api_usage=lambda wildcards: sorted(api_usage(wildcards).values()),
        timings=lambda wildcards: sorted(timing_records(wildcards).values()),
        runs=expand(run_path("{method}"), method=METHODS, allow_missing=True),
        chunks=sorted({corpus_path(m, "chunks.parquet") for m in METHODS}),
        index_files=lambda wildcards: sorted(
            {path for paths in index_files().values() for path in paths}
        ),
        index_stats=sorted(set(INDEX_STATS.values())),
    output:
        cost=f"{R}/{{qset}}/cost.md",
        frontier_png=f"{R}/{{qset}}/frontier.png",
        frontier_svg=f"{R}/{{qset}}/frontier.svg",
        cost_html=report(
            f"{R}/{{qset}}/cost.html",
            category="Comparison",
            subcategory="{qset}",
            caption="../report/cost.rst",
        ),
    log:
        f"{LOGS}/cost_page/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/cost_page/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        dataset=DATASET["name"],
        report=REPORT,
        cost_plan=cost_plan,
        api_usage=api_usage,
        timings=timing_records,
        method_types={m: METHOD_SPECS[m]["type"] for m in METHODS},
        method_inputs={m: method_inputs(METHOD_SPECS[m]) for m in METHODS},
        decision=DECISION,
        methods=METHODS,
        chunks={m: corpus_path(m, "chunks.parquet") for m in METHODS},
        index_files=lambda wildcards: index_files(),
        margins=MARGINS,
        index_stats=INDEX_STATS,
    script:
        "../scripts/cost_page.py"


# The run's record for the history page: recorded metrics per method and the models each loaded.
rule history_record:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        engine_runs=engine_runs,
    output:
        record=f"{R}/{{qset}}/history-record.json",
    log:
        f"{LOGS}/history_record/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/history_record/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset=DATASET["name"],
        report=REPORT,
        config_json=lambda wildcards: CONFIG_JSON[wildcards.qset],
        config_sha256=lambda wildcards: CONFIG_SHA256[wildcards.qset],
        draft=lambda wildcards: bool(drafts_of(wildcards.qset)),
        models=resolved_models(),
        engine_methods=engine_methods(),
        method_models={m: method_models(EXPANDED_CONFIG, m) for m in METHODS},
    script:
        "../scripts/history_record.py"


rule draw_plots:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        grades=expand(f"{R}/{{{{qset}}}}/grades/{{method}}.parquet", method=METHODS),
    output:
        **figure_outputs(),
    log:
        f"{LOGS}/draw_plots/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/draw_plots/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        methods=METHODS,
        grain=REPORT["grain"],
        headline=REPORT["headline"],
        plot_metric=REPORT["plot_metric"],
        baseline=EVALUATION["baseline"],
    script:
        "../scripts/draw_plots.py"


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
        "../scripts/failure_analysis.py"


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
        "../scripts/calibrate.py"


rule diff_qsets:
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
        f"{LOGS}/diff_qsets/{{a}}-vs-{{b}}.log",
    benchmark:
        f"{R}/benchmarks/diff_qsets/{{a}}-vs-{{b}}.tsv"
    wildcard_constraints:
        a=choice(QSETS),
        b=choice(QSETS),
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.a, wildcards.b),
        methods=METHODS,
        grain=REPORT["grain"],
        headline=REPORT["headline"],
        ks=EVALUATION["ks"],
    script:
        "../scripts/diff_qsets.py"


# Every run remembered (docs/how-to/runs.md): this run's pending record and what changed since
# the last recorded run of the version; the record_history job stores the record once the run is complete. And the
# effective config, from the config_json this job reads anyway (every config change reruns both).
rule record_run:
    input:
        metrics=expand(f"{R}/{{{{qset}}}}/metrics/{{method}}.parquet", method=METHODS),
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        # Only with abstention zones: without, the record (and a quick run) waits for no calibration job.
        question_zones=lambda wildcards: zones_input(wildcards, "zones.parquet"),
        engine_runs=engine_runs,
    output:
        record=f"{R}/{{qset}}/run-record.parquet",
        section=f"{R}/{{qset}}/since-last-run.md",
        changed=f"{R}/{{qset}}/since-last-run.parquet",
        effective_config=f"{R}/{{qset}}/effective-config.yaml",
    log:
        f"{LOGS}/record_run/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/record_run/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset=DATASET["name"],
        methods=METHODS,
        store=lambda wildcards: f"{R}/{wildcards.qset}/{RUNS_FOLDER}",
        config_json=lambda wildcards: CONFIG_JSON[wildcards.qset],
        config_sha256=lambda wildcards: CONFIG_SHA256[wildcards.qset],
        draft=lambda wildcards: bool(drafts_of(wildcards.qset)),
        report=REPORT,
        resamples=EVALUATION["bootstrap_resamples"],
        seed=EVALUATION["seed"],
        method_types={m: METHOD_SPECS[m]["type"] for m in METHODS},
        models=resolved_models(),
        engine_methods=engine_methods(),
        method_models={m: method_models(EXPANDED_CONFIG, m) for m in METHODS},
        zones=ABSTENTION_ZONES,
    script:
        "../scripts/record_run.py"


rule record_history:
    input:
        records=expand(f"{R}/{{qset}}/history-record.json", qset=QSETS),
        runs=expand(f"{R}/{{qset}}/run-record.parquet", qset=QSETS),
    output:
        markdown=f"{R}/history.md",
        html=f"{R}/history.html",
        png=f"{R}/history.png",
        svg=f"{R}/history.svg",
    log:
        f"{LOGS}/record_history.log",
    benchmark:
        f"{R}/benchmarks/record_history.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        history=HISTORY,
        dataset=DATASET["name"],
        metric="{}@{}".format(*REPORT["plot_metric"]),
        stores=[f"{R}/{qset}/{RUNS_FOLDER}" for qset in QSETS],
        headline=REPORT["headline"],
        mlflow=MLFLOW,
    script:
        "../scripts/record_history.py"


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
        "../scripts/explorer.py"


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
    # on the longest chain (aggregate, budget, comparison page): see Priorities in common.smk
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
        "../scripts/plan_budget.py"


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
        "../scripts/robustness.py"


# The entry page of the dataset's results: every version's headline and links to the pages this config writes
# (each one an input, so every link resolves).
rule index_page:
    input:
        aggregates=expand(f"{R}/{{qset}}/aggregate.parquet", qset=QSETS),
        pairs=expand(f"{R}/{{qset}}/pairs.parquet", qset=QSETS),
        manifests=expand(f"{R}/{{qset}}/qset.json", qset=QSETS),
        pages=[f"{R}/{qset}/{page}" for qset in QSETS for page in index_pages()],
        diffs=[] if QUICK else [f"{R}/diffs/{a}-vs-{b}.html" for a, b in DIFFS],
        history=[] if QUICK else [f"{R}/history.html"],
    output:
        html=f"{R}/index.html",
    log:
        f"{LOGS}/index_page.log",
    benchmark:
        f"{R}/benchmarks/index_page.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset=DATASET["name"],
        qsets=QSETS,
        drafts=drafts_of(*QSETS),
        pages=index_pages(),
        diffs=[] if QUICK else [f"{a}-vs-{b}.html" for a, b in DIFFS],
        history=not QUICK,
        quick=QUICK,
        report=REPORT,
        baseline=EVALUATION["baseline"],
        method_types={m: METHOD_SPECS[m]["type"] for m in METHODS},
        method_inputs={m: method_inputs(METHOD_SPECS[m]) for m in METHODS},
        decision=DECISION,
    script:
        "../scripts/index_page.py"
