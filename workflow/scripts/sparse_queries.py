"""Encode the questions of one version (or a rewrite source) with a sparse encoder, once for all its methods."""

import pandas as pd

from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.encoders.sparse import SparseEncoderSpec, encode, load_sparse_encoder, vocabulary
from rankbench.retrieval.sparse import save_matrix


def main(snakemake):
    spec = SparseEncoderSpec(**snakemake.params.encoder)
    model = load_sparse_encoder(spec)
    texts = pd.read_parquet(snakemake.input.questions)["question"].tolist()
    save_matrix(encode(model, texts, True, spec.batch_size), vocabulary(model), snakemake.output.queries)


run_script(main, snakemake)
