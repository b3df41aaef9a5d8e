# The breakdowns page of each version: every metric per question kind, per tag and per difficulty, apart from the
# comparison page (which keeps the headline metric per kind and links here). Built in a quick run too: it reads
# only the aggregate's tables.


rule breakdowns_page:
    input:
        aggregate=f"{R}/{{qset}}/aggregate.parquet",
        breakdowns=f"{R}/{{qset}}/breakdowns.parquet",
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        markdown=f"{R}/{{qset}}/breakdowns.md",
        html=report(
            f"{R}/{{qset}}/breakdowns.html",
            category="Comparison",
            subcategory="{qset}",
            caption="../report/breakdowns.rst",
        ),
    log:
        f"{LOGS}/breakdowns_page/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/breakdowns_page/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    params:
        drafts=lambda wildcards: drafts_of(wildcards.qset),
        dataset=DATASET["name"],
        report=REPORT,
        ks=EVALUATION["ks"],
    script:
        in_worker("../scripts/breakdowns_page.py")
