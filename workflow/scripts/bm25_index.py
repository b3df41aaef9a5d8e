"""Build one BM25 method's index over the chunks."""

import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.bm25 import analyzer_and_params, build_index, save_index


def main(snakemake):
    analyzer, params = analyzer_and_params(snakemake.params.spec, snakemake.params.language)
    chunks = pd.read_parquet(snakemake.input.chunks)
    save_index(build_index(passage_text(chunks), analyzer, params), analyzer, params, snakemake.output.index)


run_script(main, snakemake)
