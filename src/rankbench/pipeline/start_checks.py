"""Checks of the dataset's files that can fail, run when the workflow starts (Snakefile parse time).

They run on every run, dry runs included, whatever Snakemake schedules and whatever exists under results/:
Snakemake decides what to rerun by modification times and may schedule nothing (a frozen file edited with its
mtime restored, or outputs deleted by a failed job while downstream outputs remain), so a check inside a job
alone can be skipped. The same loaders run again inside the jobs as a second line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rankbench.corpus.chunking import ChunkerSpec, check_chunkable
from rankbench.corpus.label_checks import check_label_targets
from rankbench.io.frozen import (
    check_frozen,
    check_results_record,
    content_hash,
    read_lock,
    results_record,
    rewrite_lock_key,
)
from rankbench.io.loaders import (
    load_beir_corpus,
    load_beir_questions,
    load_corpus,
    load_questions,
)
from rankbench.io.rewrites import load_rewrites


def version_files(config: Mapping[str, Any], version: str) -> list[str]:
    """The files that make a question-set version: its JSONL, or a BEIR split's queries and qrels."""
    dataset = config["dataset"]
    if dataset["format"] == "native":
        return [config["qsets"][version]["path"]]
    split = config["qsets"][version]["split"]
    return [f"{dataset['path']}/queries.jsonl", f"{dataset['path']}/qrels/{split}.tsv"]


def corpus_file(config: Mapping[str, Any]) -> str:
    dataset = config["dataset"]
    return dataset["corpus"] if dataset["format"] == "native" else f"{dataset['path']}/corpus.jsonl"


def corpus_record(documents: Path | str) -> Path:
    """Beside documents.parquet: the sha256 of the corpus file it was loaded (and so validated) from. Not a workflow
    output, like the frozen records: it only lets a start-of-run check skip reparsing an unchanged corpus."""
    return Path(documents).with_name(".corpus-sha256")


def checked_documents(config: Mapping[str, Any], schemas: Path, results: str) -> pd.DataFrame:
    """The corpus's documents (doc_id and text at least), every record checked.

    Parsing JSON costs ~50 µs a document here; hashing the file costs ~100x less. So when documents.parquet was
    loaded from a corpus with the same sha256, its records passed these very checks and it is read instead.
    """
    corpus = Path(corpus_file(config))
    documents = Path(results) / "corpus" / "documents.parquet"
    record = corpus_record(documents)
    if documents.exists() and record.exists() and record.read_text(encoding="utf-8").strip() == content_hash([corpus]):
        return pd.read_parquet(documents, columns=["doc_id", "title", "text"])
    if config["dataset"]["format"] == "native":
        return load_corpus(corpus, yaml.safe_load((schemas / "corpus.schema.yaml").read_text(encoding="utf-8")))
    return load_beir_corpus(corpus)


def check_frozen_files(config: Mapping[str, Any], results: str) -> None:
    """Every version and rewrites file hashes to its lock entry (native) and to what its results were made from.

    The files are small: they are hashed on every run, so an edit is found whatever the modification times say.
    """
    dataset = config["dataset"]
    native = dataset["format"] == "native"
    lock = read_lock(dataset["lock"]) if native else {}
    for version, spec in sorted(config["qsets"].items()):
        files = [Path(path) for path in version_files(config, version)]
        digest = check_frozen(version, files, lock.get(version), dataset["lock"]) if native else content_hash(files)
        check_results_record(version, digest, results_record(f"{results}/{version}"))
        for rewrite, path in sorted(spec.get("rewrites", {}).items()):
            key = rewrite_lock_key(version, rewrite)
            digest = check_frozen(key, [Path(path)], lock.get(key), dataset["lock"]) if native \
                else content_hash([Path(path)])
            check_results_record(key, digest, results_record(f"{results}/{version}", rewrite))


def check_dataset_records(config: Mapping[str, Any], schemas: Path, results: str) -> None:
    """Every record of the corpus, the question sets, their labels and rewrites, with the loaders the jobs use."""
    native = config["dataset"]["format"] == "native"
    corpus = Path(corpus_file(config))
    documents = checked_documents(config, schemas, results)
    question_schema = yaml.safe_load((schemas / "questions.schema.yaml").read_text(encoding="utf-8"))
    for name, spec in sorted(config["chunkers"].items()):
        check_chunkable(documents, ChunkerSpec(**spec), corpus, f"chunker {name!r}")
    for version, spec in sorted(config["qsets"].items()):
        files = [Path(path) for path in version_files(config, version)]
        questions, labels = load_questions(files[0], question_schema) if native else load_beir_questions(*files)
        check_label_targets(labels, documents, files[-1])
        for path in spec.get("rewrites", {}).values():
            load_rewrites(Path(path), questions)


def check_dataset(config: Mapping[str, Any], schemas: Path, results: str) -> None:
    """All start-of-run checks of the dataset's files; `results` is the dataset's results folder."""
    check_frozen_files(config, results)
    check_dataset_records(config, schemas, results)
