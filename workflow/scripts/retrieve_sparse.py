"""Rank chunks for every question by the dot product of sparse term weights, optionally filtered."""

import numpy as np
import pandas as pd

from rankbench.corpus.filters import chunk_masks
from rankbench.errors import InputError
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.ranked_lists import run_from_topk
from rankbench.records.timing import Timing
from rankbench.retrieval.sparse import load_matrix, search


def main(snakemake):
    timing = Timing()
    with timing.once("load"):
        questions = pd.read_parquet(snakemake.input.questions)
        chunks = pd.read_parquet(snakemake.input.chunks)
        index, index_vocab = load_matrix(snakemake.input.index)
        queries, query_vocab = load_matrix(snakemake.input.queries)
        allowed = chunk_masks(questions, chunks, snakemake.params.filters)
    if not np.array_equal(index_vocab, query_vocab):
        raise InputError(snakemake.input.queries, None, f"was encoded with another vocabulary than "
                         f"{snakemake.input.index}", "Delete both and rerun: they must come from one model.")
    with timing.batch(questions["qid"].tolist()):  # one pass over the inverted index for all questions
        positions, scores = search(index, queries, snakemake.params.depth, allowed)
    write_parquet(run_from_topk(questions["qid"], positions, scores, chunks, snakemake.params.depth),
                  snakemake.output.run)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
