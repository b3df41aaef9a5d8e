"""Write a version's qrels for one chunker as TREC qrels files, one per grain (document ids, chunk ids)."""

import pandas as pd

from rankbench.io.trec import write_qrels
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    qrels = pd.read_parquet(snakemake.input.qrels)
    write_qrels(qrels[qrels["grain"] == "document"], snakemake.output.docs)
    write_qrels(qrels[qrels["grain"] == "chunk"], snakemake.output.chunks)


run_script(main, snakemake)
