"""Agreement of the LLM judge with the human labels, as Markdown and Parquet."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.analysis.agreement import agreement
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.agreement import agreement_markdown


def main(snakemake):
    judged = pd.read_parquet(snakemake.input.judgements)
    stats, cells = agreement(judged, snakemake.params.resamples, snakemake.params.seed)
    write_parquet(cells, snakemake.output.confusion)
    write_parquet(stats, snakemake.output.agreement)
    write_text(agreement_markdown(stats, cells, judged, f"question-set version {snakemake.wildcards.qset}"),
               snakemake.output.report)


run_script(main, snakemake)
