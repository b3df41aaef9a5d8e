"""Build one FAISS index (exact, HNSW or IVF) over the chunk embeddings."""

import numpy as np

from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.dense import IndexSpec, build_index, save_index


def main(snakemake):
    index = build_index(np.load(snakemake.input.embeddings), IndexSpec.from_config(snakemake.params.spec))
    save_index(index, snakemake.output.index)


run_script(main, snakemake)
