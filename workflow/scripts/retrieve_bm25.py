"""Rank chunks for every question with one BM25 method."""

import pandas as pd

from rankbench.bm25 import load_index, search
from rankbench.files import write_parquet
from rankbench.runs import run_from_topk
from rankbench.scripting import run_script


def main(snakemake):
    index, analyzer, _ = load_index(snakemake.input.index)
    questions = pd.read_parquet(snakemake.input.questions)
    positions, scores = search(index, analyzer, questions["question"].tolist(), snakemake.params.depth)
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "doc_id"])
    run = run_from_topk(questions["qid"], positions, scores, chunks, snakemake.params.depth, drop_nonpositive=True)
    write_parquet(run, snakemake.output.run)


run_script(main, snakemake)
