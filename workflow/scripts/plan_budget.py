"""The question-budget page of one question-set version: questions needed to separate the pairs that matter."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.analysis.budget import BUDGET_COLUMNS, plan_budget
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.budget import budget_page
from rankbench.report.pages import draft_banner, markdown_html


def main(snakemake):
    p, qset = snakemake.params, snakemake.wildcards.qset
    per_query = {method: pd.read_parquet(path) for method, path in zip(p.methods, snakemake.input.metrics)}
    aggregate = pd.read_parquet(snakemake.input.aggregate)
    table = plan_budget(per_query, aggregate, p.grain, [tuple(item) for item in p.headline], p.baseline, p.alpha,
                        p.seed)
    table = table.assign(dataset=p.dataset, qset=qset)[BUDGET_COLUMNS]
    page = budget_page(table, p.dataset, qset, p.alpha)
    write_parquet(table, snakemake.output.budget)
    page = draft_banner(p.drafts) + page
    write_text(markdown_html(page, f"budget {qset}"), snakemake.output.html)
    write_text(page, snakemake.output.markdown)


run_script(main, snakemake)
