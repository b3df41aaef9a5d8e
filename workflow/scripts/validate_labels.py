"""Validate a version's labels against the corpus and each chunker's chunks: a label naming a missing document or
section, or evidence not found in its document, stops the run; other problems go to validation.md. Only validated
labels reach labels.parquet, their evidence resolved to character offsets."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

from rankbench.corpus.label_checks import (
    check_label_targets,
    label_findings,
)
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.labels import findings_markdown


def main(snakemake):
    manifest = json.loads(Path(snakemake.input.manifest).read_text(encoding="utf-8"))
    questions = pd.read_parquet(snakemake.input.questions)
    labels = pd.read_parquet(snakemake.input.labels)
    documents = pd.read_parquet(snakemake.input.documents)
    labels = check_label_targets(labels, documents, manifest["labels_from"])
    chunks = {chunker: pd.read_parquet(path, columns=["chunk_id", "doc_id", "sections"])
              for chunker, path in zip(snakemake.params.chunkers, snakemake.input.chunks, strict=True)}
    findings = label_findings(questions, labels, documents, chunks)
    # No draft banner: labels.parquet, which every question-side job reads, must not be remade by freezing; the
    # comparison page that shows these findings carries the banner.
    write_text(findings_markdown(findings, f"question-set version {manifest['version']}"), snakemake.output.validation)
    write_parquet(labels, snakemake.output.labels)


run_script(main, snakemake)
