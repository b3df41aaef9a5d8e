"""Cut the documents into chunks with one chunker."""

import pandas as pd

from rankbench.chunking import ChunkerSpec, chunk_corpus
from rankbench.files import write_parquet
from rankbench.scripting import run_script


def main(snakemake):
    chunks = chunk_corpus(pd.read_parquet(snakemake.input.documents), ChunkerSpec(**snakemake.params.spec))
    write_parquet(chunks, snakemake.output.chunks)


run_script(main, snakemake)
