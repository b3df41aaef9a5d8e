"""Load and validate the corpus (native JSONL or BEIR) into documents.parquet, and record which content it was."""

from pathlib import Path

import yaml

from rankbench.io.files import write_parquet, write_text
from rankbench.io.frozen import content_hash
from rankbench.io.loaders import load_beir_corpus, load_corpus
from rankbench.pipeline.scripting import run_script
from rankbench.pipeline.start_checks import corpus_record


def main(snakemake):
    corpus = Path(snakemake.input.corpus)
    digest = content_hash([corpus])
    if snakemake.params.format == "beir":
        documents = load_beir_corpus(corpus)
    else:
        documents = load_corpus(corpus, yaml.safe_load(Path(snakemake.input.schema).read_text()))
    write_parquet(documents, snakemake.output.documents)
    write_text(digest + "\n", corpus_record(snakemake.output.documents))


run_script(main, snakemake)
