"""Fuse the input runs: reciprocal rank fusion, or CombSUM / CombMNZ over normalized scores."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.records.timing import Timing
from rankbench.retrieval.fusion import reciprocal_rank_fusion, score_fusion


def main(snakemake):
    timing = Timing()
    with timing.once("load"):
        runs = [pd.read_parquet(path) for path in snakemake.input.runs]
    params = snakemake.params
    with timing.batch(sorted(set().union(*(run["qid"].unique() for run in runs)))):  # grouped over all questions
        if params.kind == "rrf":
            fused = reciprocal_rank_fusion(runs, k=params.k, depth=params.depth, weights=params.weights)
        else:
            fused = score_fusion(runs, params.kind, params.normalization, depth=params.depth,
                                 weights=params.weights)
    write_parquet(fused, snakemake.output.run)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
