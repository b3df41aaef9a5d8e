"""Encode the questions of one version (or a rewrite source) with a sparse encoder, once for all its methods."""

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.records.timing import Timing
from rankbench.retrieval.encoders.sparse import SparseEncoderSpec, encode, load_sparse_encoder, vocabulary
from rankbench.retrieval.sparse import save_matrix


def main(snakemake):
    timing = Timing()
    spec = SparseEncoderSpec(**snakemake.params.encoder)
    with timing.once("load"):
        model = load_sparse_encoder(spec)
        questions = pd.read_parquet(snakemake.input.questions)
    with timing.batch(questions["qid"].tolist()):  # the encoder batches the questions
        weights = encode(model, questions["question"].tolist(), True, spec.batch_size)
    save_matrix(weights, vocabulary(model), snakemake.output.queries)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
