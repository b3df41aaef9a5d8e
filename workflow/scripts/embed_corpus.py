"""Encode every chunk with one encoder (normalized float32)."""

import pandas as pd
import torch

from rankbench.chunking import passage_text
from rankbench.encoders import EncoderSpec, load_encoder
from rankbench.files import write_npy
from rankbench.scripting import run_script


def main(snakemake):
    torch.set_num_threads(snakemake.threads)
    encoder = load_encoder(EncoderSpec(**snakemake.params.encoder))
    chunks = pd.read_parquet(snakemake.input.chunks)
    write_npy(encoder.encode_passages(passage_text(chunks)), snakemake.output.embeddings)


run_script(main, snakemake)
