"""Build a vector database's collection of the chunk embeddings (and its ANN index); the manifest records the engine
and its version, the index parameters and the table version."""

import json

import numpy as np
import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.retrieval.vectordb import VectorIndex, build_collection, database_folder


def main(snakemake):
    spec = {key: value for key, value in snakemake.params.spec.items() if key != "engine"}
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id"])
    manifest = build_collection(np.load(snakemake.input.embeddings), chunks["chunk_id"],
                                database_folder(snakemake.output.manifest), VectorIndex.from_config(spec))
    write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", snakemake.output.manifest)


run_script(main, snakemake)
