# Across versions and runs: question-set diffs, the run records, the history page and the dataset's entry page.
from rankbench.analysis.run_store import RUNS_FOLDER
from rankbench.configuration.models import method_models
from rankbench.retrieval.registry import method_inputs


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
        in_worker("../scripts/history_record.py")


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
        in_worker("../scripts/diff_qsets.py")


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
        in_worker("../scripts/record_run.py")


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
        in_worker("../scripts/record_history.py")


# The entry page of the dataset's results: every version's headline and links to the pages this config writes
# (each one an input, so every link resolves).
rule index_page:
    input:
        aggregates=expand(f"{R}/{{qset}}/aggregate.parquet", qset=QSETS),
        pairs=expand(f"{R}/{{qset}}/pairs.parquet", qset=QSETS),
        manifests=expand(f"{R}/{{qset}}/qset.json", qset=QSETS),
        recommended=expand(f"{R}/{{qset}}/recommended.md", qset=QSETS),
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
        in_worker("../scripts/index_page.py")
