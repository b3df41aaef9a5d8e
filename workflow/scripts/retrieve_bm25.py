"""Rank chunks for every question with one BM25 method (optionally rewritten queries, RM3 feedback, filters)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import os

# Before anything imports numba (the numba backend does): its compiled kernels are kept in the results cache, so
# only a dataset's first BM25 run compiles them.
os.environ["NUMBA_CACHE_DIR"] = snakemake.params.numba_cache

import numpy as np
import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.corpus.filters import ChunkMasks, chunk_masks
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.ranked_lists import run_from_topk
from rankbench.records.timing import Timing
from rankbench.retrieval.bm25 import RM3, load_index, search, search_weighted
from rankbench.retrieval.rm3 import rm3_queries


def main(snakemake):
    timing = Timing()
    with timing.once("load"):
        index = load_index(snakemake.input.index)
        questions = pd.read_parquet(snakemake.input.questions)
        texts = pd.read_parquet(snakemake.input.queries)["question"].tolist()
        chunks = pd.read_parquet(snakemake.input.chunks)
        allowed = chunk_masks(questions, chunks, snakemake.params.filters)
    depth, prf, backend = snakemake.params.depth, snakemake.params.prf, snakemake.params.backend
    analyzer = index.analyzer
    passages = passage_text(chunks) if prf else None

    def answer(i: int):
        """Question i alone: the same ranking as a batch (each question is searched independently)."""
        mask = None if allowed is None else ChunkMasks(allowed.group[i:i + 1], allowed.masks)
        if prf:
            expanded = rm3_queries(index, analyzer, texts[i:i + 1], passages, RM3(**prf), mask)
            return search_weighted(index, expanded, depth, mask, backend)
        return search(index, analyzer, texts[i:i + 1], depth, mask, backend)

    if len(texts):
        with timing.once("compile"):  # numba compiles (or loads its cached kernels) on the first call
            answer(0)
    found = timing.each(questions["qid"].tolist(), answer)
    positions = np.vstack([p for p, _ in found]) if found else np.empty((0, depth), dtype=np.int64)
    scores = np.vstack([s for _, s in found]) if found else np.empty((0, depth))
    run = run_from_topk(questions["qid"], positions, scores, chunks, depth, drop_nonpositive=True)
    write_parquet(run, snakemake.output.run)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
