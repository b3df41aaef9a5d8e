"""Concatenate the shards' vectors in chunk order, and keep them as the content cache of the next embedding. Both
files are written a block of rows at a time: the job holds one block and the chunks' text hashes, not the corpus's
vectors (3 GB at a million passages of 256 dimensions, held three times over before)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

from dataclasses import asdict
from itertools import chain

import numpy as np
import pyarrow.parquet as pq

from rankbench.corpus.chunking import passage_text
from rankbench.execution.scripting import run_script
from rankbench.io.files import npy_row_blocks, write_npy_rows
from rankbench.retrieval.encoders.cache import cache_key, save_cache, text_hashes
from rankbench.retrieval.encoders.kinds import encoder_spec


def main(snakemake):
    vectors = sum(len(np.load(path, mmap_mode="r")) for path in snakemake.input.shards)
    chunks = pq.ParquetFile(snakemake.input.chunks)
    if vectors != chunks.metadata.num_rows:
        raise RuntimeError(f"{vectors} vectors for {chunks.metadata.num_rows} chunks: the shards do not cover the "
                           "corpus")
    write_npy_rows(chain.from_iterable(map(npy_row_blocks, snakemake.input.shards)), vectors,
                   snakemake.output.embeddings)
    hashes = np.concatenate([text_hashes(passage_text(batch.to_pandas()))
                             for batch in chunks.iter_batches(columns=["title", "text"])] or [text_hashes([])])
    key = cache_key(asdict(encoder_spec(snakemake.params.encoder)))
    save_cache(snakemake.params.cache, key, hashes, npy_row_blocks(snakemake.output.embeddings), replace=True)


run_script(main, snakemake)
