"""Per question and k: staff-only chunks in a public question's top k, and chunks out of force at its as_of."""

import pandas as pd

from rankbench.analysis.leaks import LEAK_CHUNK_COLUMNS, leak_counts
from rankbench.io.files import write_parquet
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    counts = leak_counts(pd.read_parquet(snakemake.input.run), pd.read_parquet(snakemake.input.questions),
                         pd.read_parquet(snakemake.input.chunks, columns=LEAK_CHUNK_COLUMNS), snakemake.params.ks)
    write_parquet(counts, snakemake.output.leaks)


run_script(main, snakemake)
