# The study's table over every dataset's results (workflow/rules/study_common.smk loads the datasets).


rule study_table:
    input:
        aggregates=[column["aggregate"] for column in STUDY_PLAN["columns"]],
        metrics=[
            path
            for column in STUDY_PLAN["columns"]
            for path in column["metrics"].values()
        ],
    output:
        **STUDY_OUTPUTS,
    log:
        f"logs/{STUDY_PLAN['name']}/study_table.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        plan=STUDY_PLAN,
    script:
        in_worker("../scripts/study_table.py")
