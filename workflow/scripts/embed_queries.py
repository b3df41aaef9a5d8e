"""Encode the questions of one version with one encoder, once for every method that needs them, reusing the cached
vectors of questions an earlier version (or rewrite source) already encoded."""

import json
import logging
from dataclasses import asdict

import pandas as pd

from rankbench.io.files import write_npy, write_text
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.encoders.api import usage_record
from rankbench.retrieval.encoders.cache import (
    cache_key,
    embed_queries,
    load_cache,
    save_cache,
    text_hashes,
)
from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder


def main(snakemake):
    spec = encoder_spec(snakemake.params.encoder)
    texts = pd.read_parquet(snakemake.input.questions)["question"].tolist()
    key = cache_key(asdict(spec))
    encoder = load_encoder(spec, snakemake.params.api_cache, snakemake.wildcards.encoder)
    vectors, encoded = embed_queries(encoder, texts, *load_cache(snakemake.params.cache, key))
    logging.info("encoded %d of %d questions, %d from the cache", encoded, len(texts), len(texts) - encoded)
    if encoded:
        save_cache(snakemake.params.cache, key, text_hashes(texts), vectors, replace=False)
    write_text(json.dumps(usage_record(encoder, len(texts), encoded)), snakemake.output.usage)
    write_npy(vectors, snakemake.output.embeddings)


run_script(main, snakemake)
