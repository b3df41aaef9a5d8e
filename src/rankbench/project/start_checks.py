"""Checks of the dataset's files that can fail, run when the workflow starts (Snakefile parse time).

They run on every run, dry runs included, whatever Snakemake schedules and whatever exists under results/:
Snakemake decides what to rerun by modification times and may schedule nothing (a frozen file edited with its
mtime restored, or outputs deleted by a failed job while downstream outputs remain), so a check inside a job
alone can be skipped. The same loaders run again inside the jobs as a second line.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rankbench.configuration.config import check_config, expand_chunkers
from rankbench.configuration.dataset_formats import (
    corpus_files,
    corpus_source,
    documents_digest,
    load_documents,
    load_version,
    version_files,
    version_source,
)
from rankbench.configuration.defaults import RESULTS, evaluation_settings
from rankbench.configuration.models import resolve_models
from rankbench.configuration.registrations import check_registration_files
from rankbench.corpus.chunking import ChunkerSpec, check_chunkable
from rankbench.corpus.label_checks import check_label_targets
from rankbench.errors import InputError
from rankbench.io.audience import ALL_AUDIENCES, for_audience
from rankbench.io.config_file import sorted_mappings
from rankbench.io.expansions import expansion_lock_key, expansion_record, load_expansions
from rankbench.io.files import corpus_record
from rankbench.io.frozen import (
    check_frozen,
    check_results_record,
    content_hash,
    frozen_digest,
    read_lock,
    results_record,
    rewrite_lock_key,
)
from rankbench.io.ir_datasets_source import check_same_docs, records_digest, source
from rankbench.io.loaders import SCHEMA_FOLDER
from rankbench.io.rewrites import load_rewrites
from rankbench.project.drafts import check_evaluable, is_draft
from rankbench.project.study import Member, MemberView, read_members, study_plan
from rankbench.records.mlflow import mlflow_settings
from rankbench.records.provenance import diff_pairs, margin_settings, report_settings


@contextmanager
def stop_on_input_error() -> Iterator[None]:
    """Around the Snakefile's parse: bad input found at start (config, dataset files, frozen hashes) ends Snakemake
    with its one paragraph on stderr and in its log file, and exit status 2, not followed by the frames Snakemake lists
    after an error."""
    try:
        yield
    except InputError as error:
        message = f"rankbench: {error}"
        print(message, file=sys.stderr)
        # Snakemake's log file too (its console handler may print to stdout, e.g. with --summary).
        for handler in logging.getLogger("snakemake.logging").handlers:
            if isinstance(handler, logging.FileHandler):
                handler.emit(logging.makeLogRecord({"msg": message, "levelno": logging.ERROR}))
        raise SystemExit(2) from None


def checked_documents(config: Mapping[str, Any], schemas: Path, results: str) -> pd.DataFrame:
    """The corpus's documents (doc_id and text at least), every record checked.

    Parsing JSON costs ~50 µs a document here; hashing the file costs ~100x less. So when documents.parquet was
    loaded from a corpus with the same sha256 (for ir_datasets: the same id and version), its records passed these
    very checks and it is read instead.
    """
    fmt, files, source = config["dataset"]["format"], corpus_files(config), corpus_source(config)
    documents = Path(results) / "corpus" / "documents.parquet"
    record = corpus_record(documents)
    if documents.exists() and record.exists() and \
            record.read_text(encoding="utf-8").strip() == documents_digest(fmt, files, source):
        return pd.read_parquet(documents, columns=["doc_id", "title", "text"])
    return load_documents(fmt, files, source, _schema(schemas, "corpus"))


def _schema(schemas: Path, name: str) -> dict[str, Any]:
    return yaml.safe_load((schemas / f"{name}.schema.yaml").read_text(encoding="utf-8"))


def check_frozen_files(config: Mapping[str, Any], results: str) -> None:
    """Every version and rewrites file hashes to its lock entry (native; a draft has none) and to what its results
    were made from (a draft's never record any, unless it was once frozen and run).

    The files are small: they are hashed on every run, so an edit is found whatever the modification times say.
    An ir_datasets version has no file: check_dataset_records checks the digest of its records.
    """
    dataset = config["dataset"]
    native = dataset["format"] == "native"
    lock = read_lock(dataset["lock"]) if native else {}
    for version, spec in sorted(config["qsets"].items()):
        files = [Path(path) for path in version_files(config, version)]
        if files:
            digest = check_frozen(version, files, lock.get(version), dataset["lock"]) \
                if native and not is_draft(config, version, lock) else content_hash(files)
            check_results_record(version, digest, results_record(f"{results}/{version}"))
        for rewrite, path in sorted(spec.get("rewrites", {}).items()):
            key = rewrite_lock_key(version, rewrite)
            digest = frozen_digest(key, Path(path), lock.get(key), dataset["lock"] if native else None)
            check_results_record(key, digest, results_record(f"{results}/{version}", rewrite))
    for name, path in sorted(dataset.get("expansions", {}).items()):
        key = expansion_lock_key(name)
        digest = frozen_digest(key, Path(path), lock.get(key), dataset["lock"] if native else None)
        check_results_record(key, digest, expansion_record(results, name))


def check_dataset_records(config: Mapping[str, Any], schemas: Path, results: str, config_file: str = "config"
                          ) -> None:
    """Every record of the corpus, the question sets, their labels and rewrites, with the loaders the jobs use; each
    version has questions of report.audience."""
    fmt = config["dataset"]["format"]
    documents = checked_documents(config, schemas, results)
    corpus = (corpus_files(config) or [source(config["dataset"].get("id", ""), "docs")])[0]
    question_schema = _schema(schemas, "questions")
    for name, spec in sorted(config["chunkers"].items()):
        check_chunkable(documents, ChunkerSpec.from_config(spec), corpus, f"chunker {name!r}")
    doc_ids = set(documents["doc_id"])
    for path in config["dataset"].get("expansions", {}).values():
        load_expansions(Path(path), doc_ids)
    for version, spec in sorted(config["qsets"].items()):
        files, version_spec = version_files(config, version), version_source(config, version)
        if not files:
            check_same_docs(config["dataset"]["id"], version_spec["id"])
        questions, labels = load_version(fmt, files, version_spec, question_schema)
        if not files:
            check_results_record(version, records_digest(questions, labels), results_record(f"{results}/{version}"))
        labels_source = files[-1] if files else source(version_spec["id"], "qrels")
        check_label_targets(labels, documents, labels_source)
        check_evaluable(labels, evaluation_settings(config), labels_source)
        for_audience(questions, labels, config.get("report", {}).get("audience", ALL_AUDIENCES), version, config_file)
        for path in spec.get("rewrites", {}).values():
            load_rewrites(Path(path), questions)


def check_dataset(config: Mapping[str, Any], schemas: Path, results: str, config_file: str = "config") -> None:
    """All start-of-run checks of the dataset's files; `results` is the dataset's results folder."""
    check_frozen_files(config, results)
    check_dataset_records(config, schemas, results, config_file)


@dataclass(frozen=True)
class StartPlan:
    """What a dataset run's start checks resolved, as the workflow's rules read it."""

    config: dict[str, Any]  # every mapping sorted, chunker grids expanded into one chunker per point
    methods: dict[str, dict[str, Any]]  # method grids expanded into one method per point
    model_commits: dict[str, str | None]  # config key -> the hub commit its model resolved to (None: not a hub id)
    margins: list[list[Any]]  # evaluation.margin as [metric, k, δ]
    report: dict[str, Any]  # the report block with its defaults
    diffs: list[tuple[str, str]]
    mlflow: dict[str, str] | None


def start_run(config: Mapping[str, Any], config_file: str, main_process: bool = True) -> StartPlan:
    """Every check a dataset run makes when it starts, in order: what each method type's helpers register against the
    registry (check_registration_files), the config whole (check_config), hub models (resolved,
    downloaded once by the main process when hub access is on), the dataset's files and records (main process), the
    margins, report, diffs and MLflow settings. The workflow (common.smk) and `rankbench check` both call this one
    function, so `check` refuses exactly what `run` refuses at start. Paths resolve against the working directory
    (the project folder)."""
    check_registration_files()
    settings: dict[str, Any] = sorted_mappings(config)
    schema = yaml.safe_load((SCHEMA_FOLDER / "config.schema.yaml").read_text(encoding="utf-8"))
    methods = check_config(settings, schema, config_file)
    settings["chunkers"] = expand_chunkers(settings["chunkers"], config_file)
    commits = resolve_models({**settings, "methods": methods}, config_file, download=main_process)
    if main_process:
        results = f"{settings.get('results', RESULTS)}/{settings['dataset']['name']}"
        check_dataset(settings, SCHEMA_FOLDER, results, config_file)
    ks = evaluation_settings(settings)["ks"]
    report = report_settings(settings, ks, config_file)
    return StartPlan(settings, methods, commits, margin_settings(settings, ks, config_file), report,
                     diff_pairs(settings, config_file), mlflow_settings(report, os.environ.get("MLFLOW_TRACKING_URI")))


def start_study(config: Mapping[str, Any], config_file: str) -> dict[str, Member]:
    """Every check a study run makes when it starts (workflow/rules/study_common.smk): the study itself, each dataset
    config's start_run (as the module loading it runs it), then the study's plan against what they configure. The
    members by column label; `rankbench check` calls it for a study config, which it once passed unchecked."""
    members = read_members(config, _schema(SCHEMA_FOLDER, "study"), config_file)
    plans: dict[str, StartPlan] = {}  # a dataset config several columns show is checked once
    views: dict[str, MemberView] = {}
    for label, member in members.items():
        if member.source not in plans:
            plans[member.source] = start_run(member.config, member.source)
        plan = plans[member.source]
        dataset, qsets = plan.config["dataset"], sorted(plan.config["qsets"])
        lock = read_lock(dataset["lock"]) if dataset["format"] == "native" else {}
        views[label] = MemberView(source=member.source, dataset=dataset["name"],
                                  results=f"{plan.config.get('results', RESULTS)}/{dataset['name']}", qsets=qsets,
                                  method_types={m: spec["type"] for m, spec in plan.methods.items()},
                                  evaluation=evaluation_settings(plan.config),
                                  drafts=[q for q in qsets if is_draft(plan.config, q, lock)])
    study_plan(config, config_file, views)
    return members
