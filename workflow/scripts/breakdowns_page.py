"""Write the breakdowns page of one question-set version (Markdown, HTML): every metric per question kind, per tag
and per difficulty (rankbench.report.breakdowns)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the run's job worker, its libraries loaded, when one serves it

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.report.breakdowns import breakdowns_html, breakdowns_markdown


def main(snakemake):
    p, given = snakemake.params, snakemake.input
    markdown = breakdowns_markdown(pd.read_parquet(given.aggregate), pd.read_parquet(given.breakdowns),
                                   pd.read_parquet(given.questions), p.report, p.ks, p.dataset,
                                   snakemake.wildcards.qset, p.drafts)
    write_text(markdown, snakemake.output.markdown)
    write_text(breakdowns_html(markdown, p.dataset, snakemake.wildcards.qset), snakemake.output.html)


run_script(main, snakemake)
