"""Per-query metrics of one run, at chunk and document grain."""

import pandas as pd

from rankbench.evaluation import evaluate_run
from rankbench.files import write_parquet
from rankbench.scripting import run_script


def main(snakemake):
    per_query = evaluate_run(pd.read_parquet(snakemake.input.run), pd.read_parquet(snakemake.input.questions),
                             pd.read_parquet(snakemake.input.qrels), snakemake.params.ks,
                             relevance_threshold=snakemake.params.relevance_threshold, gain=snakemake.params.gain)
    write_parquet(per_query, snakemake.output.metrics)


run_script(main, snakemake)
