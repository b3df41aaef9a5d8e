"""Encode every chunk (title + text, as the dense encoders see it) with a sparse encoder: the index of its methods."""

import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.execution.scripting import run_script
from rankbench.retrieval.encoders.sparse import SparseEncoderSpec, encode, load_sparse_encoder, vocabulary
from rankbench.retrieval.sparse import save_matrix


def main(snakemake):
    spec = SparseEncoderSpec(**snakemake.params.encoder)
    model = load_sparse_encoder(spec)
    texts = passage_text(pd.read_parquet(snakemake.input.chunks, columns=["title", "text"]))
    save_matrix(encode(model, texts, False, spec.batch_size), vocabulary(model), snakemake.output.index)


run_script(main, snakemake)
