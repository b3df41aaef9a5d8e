"""The tidy aggregate of one question-set version (one row per method, grain, kind, metric, k) and all pairs."""

import pandas as pd

from rankbench.evaluation import aggregate
from rankbench.files import write_parquet
from rankbench.scripting import run_script


def main(snakemake):
    per_query = {method: pd.read_parquet(path) for method, path in zip(snakemake.params.methods,
                                                                        snakemake.input.metrics)}
    questions = pd.read_parquet(snakemake.input.questions)
    table, pairs = aggregate(per_query, questions, snakemake.params.dataset, snakemake.wildcards.qset,
                             n_resamples=snakemake.params.resamples, seed=snakemake.params.seed,
                             baseline=snakemake.params.baseline)
    write_parquet(pairs, snakemake.output.pairs)
    write_parquet(table, snakemake.output.aggregate)


run_script(main, snakemake)
