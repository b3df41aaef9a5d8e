"""Write a run as TREC run files with the method's own scores, ordered so trec_eval reproduces our ranks (ties
included): at document grain (each document at its first chunk's rank: doc ids, scored by the dataset's own qrels)
and, when asked, chunk grain; beside them the run's ir_metadata (PRIMAD) as YAML, with the provenance the run
file holds (a search endpoint's)."""

import json
from pathlib import Path

import pandas as pd

from rankbench.io.files import parquet_metadata
from rankbench.io.runs import collapse_to_documents
from rankbench.io.trec import write_trec_run
from rankbench.pipeline.ir_metadata import run_metadata, write_run_metadata
from rankbench.pipeline.scripting import run_script
from rankbench.pipeline.start_checks import corpus_record


def main(snakemake):
    run, tag = pd.read_parquet(snakemake.input.run), snakemake.wildcards.method
    write_trec_run(collapse_to_documents(run), snakemake.output.docs, tag=tag, id_column="doc_id")
    if "chunks" in snakemake.output.keys():  # noqa: SIM118 (a Namedlist: `in` alone tests its values)
        write_trec_run(run, snakemake.output.chunks, tag=tag, id_column="chunk_id")
    corpus_sha256 = corpus_record(snakemake.input.documents).read_text().strip()
    qset = json.loads(Path(snakemake.input.manifest).read_text())
    provenance = parquet_metadata(snakemake.input.run).get("provenance")
    write_run_metadata(run_metadata(tag, snakemake.params.spec, snakemake.params.dataset, qset, corpus_sha256,
                                    provenance), snakemake.output.metadata)


run_script(main, snakemake)
