# The comparison page of each version, its plots and its cost page.
from rankbench.configuration.models import method_cards
from rankbench.retrieval.registry import method_inputs


rule comparison_table:
    input:
        unpack(how_sure_inputs),
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        pairs=f"{R}/{{qset}}/pairs.parquet",
        tiers=f"{R}/{{qset}}/tiers.parquet",
        zone_table=lambda wildcards: zones_input(wildcards, "zone-table.parquet"),
        breakdowns=f"{R}/{{qset}}/breakdowns.parquet",
        recommended=f"{R}/{{qset}}/recommended.md",
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
        in_worker("../scripts/comparison_table.py")


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
        index_stats=sorted(set(INDEX_STATS.values())),
        serving=f"{R}/{{qset}}/serving.parquet",
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
        margins=MARGINS,
        index_stats=INDEX_STATS,
    script:
        in_worker("../scripts/cost_page.py")


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
        in_worker("../scripts/draw_plots.py")
