"""Append a frozen document expansion to a chunker's chunks: the file checked against its frozen hash (native
datasets) and what earlier results were made from, each line against the corpus."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

from pathlib import Path

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.expansions import expanded_chunks, load_expansions
from rankbench.io.files import write_parquet
from rankbench.io.frozen import frozen_digest, guard_results


def main(snakemake):
    path, key = Path(snakemake.input.expansion), snakemake.params.lock_key
    digest = frozen_digest(key, path, snakemake.params.expected_sha256, snakemake.params.lock)
    # Like a rewrite: the expansion an index was built from never changes under the same name.
    guard_results(key, digest, Path(snakemake.params.record))
    questions = load_expansions(path, set(pd.read_parquet(snakemake.input.documents, columns=["doc_id"])["doc_id"]))
    write_parquet(expanded_chunks(pd.read_parquet(snakemake.input.chunks), questions), snakemake.output.chunks)


run_script(main, snakemake)
