"""Encode one contiguous shard of the chunks with one encoder (normalized float32), reusing cached vectors of
texts any chunker embedded before (its own cache first, then the other chunkers'): a new chunker encodes only its
new texts, and the log says what share that is."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the model worker its rule declares (in_worker), torch loaded

import json
import logging
from dataclasses import asdict

import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_npy, write_text
from rankbench.retrieval.encoders.api import usage_record
from rankbench.retrieval.encoders.cache import (
    cache_key,
    embed_passages,
    load_caches,
    shard_bounds,
)
from rankbench.retrieval.encoders.kinds import OnDemandEncoder, encoder_spec


def main(snakemake):
    spec = encoder_spec(snakemake.params.encoder)
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["title", "text"])
    shard, shards = int(snakemake.wildcards.shard), snakemake.params.shards
    start, stop = shard_bounds(len(chunks), shards, shard)
    texts = passage_text(chunks.iloc[start:stop])
    cached_hashes, cached_vectors = load_caches([snakemake.params.cache, *snakemake.params.other_caches],
                                                cache_key(asdict(spec)))
    encoder = OnDemandEncoder(spec, snakemake.params.api_cache, snakemake.wildcards.encoder)
    vectors, encoded = embed_passages(encoder, texts, cached_hashes, cached_vectors)
    logging.info("shard %d of %d: chunks %d-%d; encoded %d of %d chunks (%.0f%% new texts), %d from the cache "
                 "(shared by every chunker)", shard + 1, shards, start, stop, encoded, len(texts),
                 100 * encoded / max(len(texts), 1), len(texts) - encoded)
    write_text(json.dumps(usage_record(spec, encoder.loaded, len(texts), encoded)), snakemake.output.usage)
    write_npy(vectors, snakemake.output.embeddings)


run_script(main, snakemake)
