"""Fuse the input runs with reciprocal rank fusion."""

import pandas as pd

from rankbench.files import write_parquet
from rankbench.fusion import reciprocal_rank_fusion
from rankbench.scripting import run_script


def main(snakemake):
    runs = [pd.read_parquet(path) for path in snakemake.input.runs]
    fused = reciprocal_rank_fusion(runs, k=snakemake.params.k, depth=snakemake.params.depth)
    write_parquet(fused, snakemake.output.run)


run_script(main, snakemake)
