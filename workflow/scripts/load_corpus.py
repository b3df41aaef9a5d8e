"""Load and validate the corpus (native, BEIR, TREC or ir_datasets) into documents.parquet, and record which
content it was."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

from pathlib import Path

import yaml

from rankbench.configuration.dataset_formats import documents_digest, load_documents
from rankbench.execution.scripting import run_script
from rankbench.io.files import corpus_record, write_parquet, write_text


def main(snakemake):
    fmt, files, source = snakemake.params.format, list(snakemake.input.corpus), snakemake.params.source
    digest = documents_digest(fmt, files, source)
    documents = load_documents(fmt, files, source, yaml.safe_load(Path(snakemake.input.schema).read_text()))
    write_parquet(documents, snakemake.output.documents)
    write_text(digest + "\n", corpus_record(snakemake.output.documents))


run_script(main, snakemake)
