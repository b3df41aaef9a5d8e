# Method type external: a run made elsewhere, imported.


rule import_run:
    input:
        run=lambda wildcards: METHOD_SPECS[wildcards.method]["path"].format(
            qset=wildcards.qset
        ),
        documents=f"{R}/corpus/documents.parquet",
    output:
        run=run_path("{method}"),
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("import_run")),
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 1
    params:
        format=lambda wildcards: METHOD_SPECS[wildcards.method]["format"],
        depth=EVALUATION["depth"],
    script:
        in_worker("../../scripts/import_run.py")
