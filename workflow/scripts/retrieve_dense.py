"""Rank chunks for every question by cosine similarity in the exact FAISS index."""

import numpy as np
import pandas as pd

from rankbench.dense import load_index, search
from rankbench.files import write_parquet
from rankbench.runs import run_from_topk
from rankbench.scripting import run_script


def main(snakemake):
    questions = pd.read_parquet(snakemake.input.questions)
    positions, scores = search(load_index(snakemake.input.index), np.load(snakemake.input.queries),
                               snakemake.params.depth)
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "doc_id"])
    write_parquet(run_from_topk(questions["qid"], positions, scores, chunks, snakemake.params.depth),
                  snakemake.output.run)


run_script(main, snakemake)
