"""Build one BM25 method's index over the chunks; when a method reading it searches with numba, compile numba's
kernels into the dataset's cache here, once, so that its BM25 jobs load them instead of each compiling them."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import os

# Before anything imports numba (bm25s does): compiled kernels go to the results cache.
os.environ["NUMBA_CACHE_DIR"] = snakemake.params.numba_cache

import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.execution.scripting import run_script
from rankbench.retrieval.bm25 import (
    analyzer_and_params,
    build_index,
    compile_numba_kernels,
    load_index,
    resolved_backend,
    save_index,
)


def main(snakemake):
    analyzer, params = analyzer_and_params(snakemake.params.spec, snakemake.params.language)
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["title", "text"])
    index = build_index(passage_text(chunks), analyzer, params)
    save_index(index, snakemake.output.index)
    if "numba" in {resolved_backend(backend, len(chunks)) for backend in snakemake.params.backends}:
        compile_numba_kernels(load_index(snakemake.output.index))  # as the BM25 jobs load it: the same types


run_script(main, snakemake)
