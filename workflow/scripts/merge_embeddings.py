"""Concatenate the shards' vectors in chunk order, and keep them as the content cache of the next embedding."""

from rankbench.pipeline.job_worker import hand_over

hand_over(snakemake, __file__)  # in the run's job worker, its libraries loaded, when one serves it

from dataclasses import asdict

import numpy as np
import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.io.files import write_npy
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.encoders.cache import cache_key, save_cache, text_hashes
from rankbench.retrieval.encoders.kinds import encoder_spec


def main(snakemake):
    vectors = np.concatenate([np.load(path) for path in snakemake.input.shards])
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["title", "text"])
    if len(vectors) != len(chunks):
        raise RuntimeError(f"{len(vectors)} vectors for {len(chunks)} chunks: the shards do not cover the corpus")
    write_npy(vectors, snakemake.output.embeddings)
    key = cache_key(asdict(encoder_spec(snakemake.params.encoder)))
    save_cache(snakemake.params.cache, key, text_hashes(passage_text(chunks)), vectors, replace=True)


run_script(main, snakemake)
