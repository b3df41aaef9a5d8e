"""Cut the documents into chunks with one chunker."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.corpus.chunking import ChunkerSpec, check_chunkable, chunk_corpus
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.retrieval.dense import check_index_sizes


def main(snakemake):
    documents, spec = pd.read_parquet(snakemake.input.documents), ChunkerSpec.from_config(snakemake.params.spec)
    check_chunkable(documents, spec, snakemake.input.documents, f"chunker {snakemake.wildcards.chunker!r}")
    chunks = chunk_corpus(documents, spec)
    # each index over these chunks can be built from as many (refused here, before the corpus is encoded)
    check_index_sizes(snakemake.params.indexes, len(chunks), snakemake.wildcards.chunker, "config")
    write_parquet(chunks, snakemake.output.chunks)


run_script(main, snakemake)
