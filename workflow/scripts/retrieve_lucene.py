"""Rank chunks for every question with one lucene method: Anserini's SearchCollection over the version's questions
(or their rewrites) as topics, its TREC run read back into rankbench's run (chunk and document ids)."""

import pandas as pd

from rankbench.io.files import write_parquet
from rankbench.io.runs import run_from_topk
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.lucene import Engine, LuceneAnalyzer, search


def main(snakemake):
    questions = pd.read_parquet(snakemake.input.questions)
    texts = pd.read_parquet(snakemake.input.queries)["question"].tolist()
    chunks = pd.read_parquet(snakemake.input.chunks)
    depth = snakemake.params.depth
    positions, scores = search(Engine(**snakemake.params.engine), snakemake.input.index, texts,
                               snakemake.params.options, LuceneAnalyzer(**snakemake.params.analyzer), depth,
                               snakemake.threads, snakemake.resources.mem_mb)
    write_parquet(run_from_topk(questions["qid"], positions, scores, chunks, depth), snakemake.output.run)


run_script(main, snakemake)
