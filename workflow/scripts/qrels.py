"""Relevance judgements at chunk and document grain for one chunker, and the labels that map to no chunk."""

import pandas as pd

from rankbench.io.files import write_parquet
from rankbench.io.qrels import build_qrels
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    qrels, unmapped = build_qrels(pd.read_parquet(snakemake.input.labels), pd.read_parquet(snakemake.input.chunks))
    write_parquet(unmapped, snakemake.output.unmapped)
    write_parquet(qrels, snakemake.output.qrels)


run_script(main, snakemake)
