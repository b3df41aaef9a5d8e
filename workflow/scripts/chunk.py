"""Cut the documents into chunks with one chunker."""

import pandas as pd

from rankbench.corpus.chunking import ChunkerSpec, check_chunkable, chunk_corpus
from rankbench.io.files import write_parquet
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    documents, spec = pd.read_parquet(snakemake.input.documents), ChunkerSpec(**snakemake.params.spec)
    check_chunkable(documents, spec, snakemake.input.documents, f"chunker {snakemake.wildcards.chunker!r}")
    write_parquet(chunk_corpus(documents, spec), snakemake.output.chunks)


run_script(main, snakemake)
