"""Rank chunks for every question by cosine similarity in a FAISS index (exact or approximate), optionally filtered."""

import numpy as np
import pandas as pd

from rankbench.corpus.filters import chunk_masks
from rankbench.io.files import write_parquet
from rankbench.io.runs import run_from_topk
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.dense import IndexSpec, load_index, search
from rankbench.retrieval.vector_checks import check_same_dimension


def main(snakemake):
    questions = pd.read_parquet(snakemake.input.questions)
    chunks = pd.read_parquet(snakemake.input.chunks)
    index, queries = load_index(snakemake.input.index), np.load(snakemake.input.queries)
    check_same_dimension(queries, index.d, snakemake.input.queries, snakemake.input.index)
    positions, scores = search(index, queries, snakemake.params.depth, IndexSpec(**snakemake.params.index),
                               chunk_masks(questions, chunks, snakemake.params.filters))
    write_parquet(run_from_topk(questions["qid"], positions, scores, chunks, snakemake.params.depth),
                  snakemake.output.run)


run_script(main, snakemake)
