"""Write a run as TREC run files whose scores make trec_eval reproduce our order (ties included): at document grain
(each document at its first chunk's rank: doc ids, scored by the dataset's own qrels) and, when asked, chunk grain."""

import pandas as pd

from rankbench.io.runs import collapse_to_documents
from rankbench.io.trec import write_trec_run
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    run, tag = pd.read_parquet(snakemake.input.run), snakemake.wildcards.method
    write_trec_run(collapse_to_documents(run), snakemake.output.docs, tag=tag, id_column="doc_id")
    if "chunks" in snakemake.output.keys():  # noqa: SIM118 (a Namedlist: `in` alone tests its values)
        write_trec_run(run, snakemake.output.chunks, tag=tag, id_column="chunk_id")


run_script(main, snakemake)
