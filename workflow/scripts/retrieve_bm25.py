"""Rank chunks for every question with one BM25 method (optionally rewritten queries, RM3 feedback, filters)."""

import os

# Before anything imports numba (bm25s does): the numba backend's compiled kernels are kept in the results
# cache, so only a dataset's first BM25 run compiles them.
os.environ["NUMBA_CACHE_DIR"] = snakemake.params.numba_cache

import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.corpus.filters import chunk_masks
from rankbench.io.files import write_parquet
from rankbench.io.runs import run_from_topk
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.bm25 import load_index, search, search_weighted
from rankbench.retrieval.rm3 import RM3, rm3_queries


def main(snakemake):
    index, analyzer, _ = load_index(snakemake.input.index)
    questions = pd.read_parquet(snakemake.input.questions)
    texts = pd.read_parquet(snakemake.input.queries)["question"].tolist()
    chunks = pd.read_parquet(snakemake.input.chunks)
    allowed = chunk_masks(questions, chunks, snakemake.params.filters)
    depth = snakemake.params.depth
    if snakemake.params.prf:
        expanded = rm3_queries(index, analyzer, texts, passage_text(chunks), RM3(**snakemake.params.prf), allowed)
        positions, scores = search_weighted(index, expanded, depth, allowed, snakemake.params.backend)
    else:
        positions, scores = search(index, analyzer, texts, depth, allowed, snakemake.params.backend)
    run = run_from_topk(questions["qid"], positions, scores, chunks, depth, drop_nonpositive=True)
    write_parquet(run, snakemake.output.run)


run_script(main, snakemake)
