"""Fuse the input runs: reciprocal rank fusion, or CombSUM / CombMNZ over normalized scores."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.records.timing import Timing
from rankbench.retrieval.fusion import fuse_runs


def main(snakemake):
    timing = Timing()
    with timing.once("load"):
        runs = [pd.read_parquet(path) for path in snakemake.input.runs]
    params = snakemake.params
    with timing.batch(sorted(set().union(*(run["qid"].unique() for run in runs)))):  # grouped over all questions
        fused = fuse_runs(runs, params.kind, params.k, params.normalization, params.depth, params.weights)
    write_parquet(fused, snakemake.output.run)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
