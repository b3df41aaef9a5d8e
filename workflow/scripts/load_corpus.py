"""Load and validate the corpus (native JSONL or BEIR) into documents.parquet."""

from pathlib import Path

import yaml

from rankbench.files import write_parquet
from rankbench.loaders import load_beir_corpus, load_corpus
from rankbench.scripting import run_script


def main(snakemake):
    corpus = Path(snakemake.input.corpus)
    if snakemake.params.format == "beir":
        documents = load_beir_corpus(corpus)
    else:
        documents = load_corpus(corpus, yaml.safe_load(Path(snakemake.input.schema).read_text()))
    write_parquet(documents, snakemake.output.documents)


run_script(main, snakemake)
