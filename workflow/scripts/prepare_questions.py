"""Check a question-set version against its frozen hash (a draft has none) and normalize it to Parquet, from its
files alone (the corpus is validate_labels' business, so editing a document never re-embeds the questions); with
report.audience, only that audience's questions and their labels.

Whether the version is frozen is read from the lock here, not passed as a param: freezing an unchanged draft changes
nothing these outputs hold, so it must not rerun this job and every question-side job after it (the start checks
have already held the files to the lock)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import yaml

from rankbench.configuration.dataset_formats import load_version
from rankbench.execution.scripting import run_script
from rankbench.io.audience import for_audience
from rankbench.io.files import write_parquet, write_text
from rankbench.io.frozen import (
    check_frozen,
    check_results_record,
    content_hash,
    guard_results,
    read_lock,
    results_record,
)
from rankbench.io.ir_datasets_source import records_digest
from rankbench.io.ir_datasets_source import source as ir_source


def main(snakemake):
    files = [Path(path) for path in snakemake.input.files]
    version, fmt, source = snakemake.wildcards.qset, snakemake.params.format, snakemake.params.source
    frozen = read_lock(snakemake.params.lock).get(version) if fmt == "native" else None
    if fmt == "native":
        digest = check_frozen(version, files, frozen, snakemake.params.lock) if frozen else content_hash(files)
    questions, labels = load_version(fmt, files, source, yaml.safe_load(Path(snakemake.input.schema).read_text()))
    if fmt != "native":
        # ir_datasets versions have no file of their own: what they were made from is their records.
        digest = content_hash(files) if files else records_digest(questions, labels)
    questions, labels = for_audience(questions, labels, snakemake.params.audience, version)
    manifest = {"version": version, "sha256": digest, "files": [str(path) for path in files],
                "questions": len(questions), "labels": len(labels),
                "labels_from": str(files[-1]) if files else ir_source(source["id"], "qrels"), **source,
                **({"audience": snakemake.params.audience} if snakemake.params.audience != "all" else {})}
    record = results_record(Path(snakemake.output.manifest).parent)
    # A draft changes as it is edited: it records nothing (a version once frozen and run keeps its record).
    check_results_record(version, digest, record) if fmt == "native" and not frozen else \
        guard_results(version, digest, record)
    write_text(json.dumps(manifest, indent=2) + "\n", snakemake.output.manifest)
    write_parquet(labels, snakemake.output.labels)
    write_parquet(questions, snakemake.output.questions)


run_script(main, snakemake)
