"""Encode the questions of one version with one encoder, once for every method that needs them."""

import pandas as pd
import torch

from rankbench.encoders import EncoderSpec, load_encoder
from rankbench.files import write_npy
from rankbench.scripting import run_script


def main(snakemake):
    torch.set_num_threads(snakemake.threads)
    encoder = load_encoder(EncoderSpec(**snakemake.params.encoder))
    questions = pd.read_parquet(snakemake.input.questions)
    write_npy(encoder.encode_queries(questions["question"].tolist()), snakemake.output.embeddings)


run_script(main, snakemake)
