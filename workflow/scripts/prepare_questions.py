"""Check a question-set version against its frozen hash and normalize it to Parquet, from its files alone (the
corpus is validate_labels' business, so editing a document never re-embeds the questions)."""

import json
from pathlib import Path

import yaml

from rankbench.io.files import write_parquet, write_text
from rankbench.io.frozen import (
    check_frozen,
    content_hash,
    guard_results,
    results_record,
)
from rankbench.io.loaders import load_beir_questions, load_questions
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    files = [Path(path) for path in snakemake.input.files]
    version = snakemake.wildcards.qset
    if snakemake.params.format == "beir":
        digest = content_hash(files)
        questions, labels = load_beir_questions(*files)
    else:
        digest = check_frozen(version, files, snakemake.params.expected_sha256, snakemake.params.lock)
        questions, labels = load_questions(files[0], yaml.safe_load(Path(snakemake.input.schema).read_text()))
    manifest = {"version": version, "sha256": digest, "files": [str(path) for path in files],
                "questions": len(questions), "labels": len(labels)}
    guard_results(version, digest, results_record(Path(snakemake.output.manifest).parent))
    write_text(json.dumps(manifest, indent=2) + "\n", snakemake.output.manifest)
    write_parquet(labels, snakemake.output.labels)
    write_parquet(questions, snakemake.output.questions)


run_script(main, snakemake)
