"""Encode the questions of one version with one encoder, once for every method that needs them, reusing the cached
vectors of questions an earlier version (or rewrite source) already encoded."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the model worker its rule declares (in_worker), torch loaded

import json
import logging
from collections import defaultdict
from dataclasses import asdict

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.execution.threads import limit_threads
from rankbench.io.files import write_npy, write_text
from rankbench.records.timing import Timing
from rankbench.retrieval.encoders.api import usage_record
from rankbench.retrieval.encoders.cache import (
    cache_key,
    embed_cached,
    load_cache,
    save_cache,
    text_hashes,
)
from rankbench.retrieval.encoders.kinds import QUESTION_ENCODING_THREADS, OnDemandEncoder, encoder_kind, encoder_spec


def main(snakemake):
    timing = Timing()
    spec = encoder_spec(snakemake.params.encoder)
    if not encoder_kind(snakemake.params.encoder).same_bits_at_any_threads:  # whatever the job booked: resources.smk
        limit_threads(QUESTION_ENCODING_THREADS)
    with timing.once("load"):
        questions = pd.read_parquet(snakemake.input.questions)
        texts = questions["question"].tolist()
        key = cache_key(asdict(spec))
        cached = load_cache(snakemake.params.cache, key)
    encoder = OnDemandEncoder(spec, snakemake.params.api_cache, snakemake.wildcards.encoder)
    qids_of = defaultdict(list)
    for qid, text in zip(questions["qid"], texts):
        qids_of[text].append(qid)

    def encode(batch):
        """The questions the cache misses, in one call (the encoder batches them): each pays the mean; the others
        are recorded as cached. The model loads here, when a question misses the cache."""
        with timing.once("load"):
            encoder.load()
        with timing.batch(sorted({qid for text in set(batch) for qid in qids_of[text]})):
            return encoder.encode_queries(batch)

    vectors, encoded = embed_cached(encode, texts, *cached)
    timing.cached(sorted(set(questions["qid"]) - set(timing.questions)))
    logging.info("encoded %d of %d questions, %d from the cache", encoded, len(texts), len(texts) - encoded)
    if encoded:
        save_cache(snakemake.params.cache, key, text_hashes(texts), vectors, replace=False)
    write_text(json.dumps(usage_record(spec, encoder.loaded, len(texts), encoded)), snakemake.output.usage)
    write_npy(vectors, snakemake.output.embeddings)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
