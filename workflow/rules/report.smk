rule comparison_table:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        manifest=f"{R}/{{qset}}/qset.json",
        questions=f"{R}/{{qset}}/questions.parquet",
        validation=f"{R}/{{qset}}/validation.md",
        unmapped=lambda wildcards: sorted(
            {
                f"{R}/{wildcards.qset}/qrels/{chunker_of(m)}.unmapped.parquet"
                for m in METHODS
            }
        ),
    output:
        table=report(
            f"{R}/{{qset}}/comparison.md",
            category="Comparison",
            caption="../report/comparison.rst",
        ),
    log:
        f"logs/{DATASET['name']}/comparison_table/{{qset}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        dataset=DATASET["name"],
        ks=EVALUATION["ks"],
        settings={
            key: EVALUATION[key] for key in ("relevance_threshold", "gain", "depth")
        },
    script:
        "../scripts/comparison_table.py"
