"""Build the exact FAISS inner-product index over the chunk embeddings."""

import numpy as np

from rankbench.dense import build_flat_index, save_index
from rankbench.scripting import run_script


def main(snakemake):
    save_index(build_flat_index(np.load(snakemake.input.embeddings)), snakemake.output.index)


run_script(main, snakemake)
