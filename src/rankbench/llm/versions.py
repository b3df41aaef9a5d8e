"""Question-set version files written by the LLM steps, and publishing one next to the data with its lock entry."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.files import write_atomically
from rankbench.io.frozen import content_hash, freeze, read_lock


def version_records(questions: pd.DataFrame, labels: pd.DataFrame) -> list[dict[str, Any]]:
    """Native question-set records (question order kept; labels sorted by document and section)."""
    grouped = {qid: group for qid, group in labels.sort_values(["doc_id", "section"], na_position="first")
               .groupby("qid", sort=False)}
    records = []
    for question in questions.itertuples(index=False):
        group = grouped.get(question.qid)
        question_labels = [] if group is None else [
            {"doc_id": row.doc_id, **({"section": row.section} if isinstance(row.section, str) else {}),
             "grade": int(row.grade)} for row in group.itertuples(index=False)]
        records.append({"qid": question.qid, "question": question.question, "kind": question.kind,
                        "audience": question.audience,
                        "as_of": question.as_of if isinstance(question.as_of, str) else None,
                        "labels": question_labels})
    return records


def publish(source: Path, destination: Path, version: str, lock: Path) -> str:
    """Copy an LLM output next to the question sets and register it in the lock; a frozen file is never replaced."""
    if not source.is_file():
        raise InputError(source, None, "does not exist", "Run `snakemake llm` (with the LLM config) first.")
    digest = content_hash([source])
    registered = read_lock(lock).get(version) if lock.exists() else None
    if registered is not None and registered != digest:
        raise InputError(lock, f"version {version!r}", "is already frozen with different content",
                         "Pick a new version name; frozen versions are never changed.")
    if destination.exists() and content_hash([destination]) != digest:
        raise InputError(destination, None, "already exists with other content",
                         "A published version never changes: publish under a new version name and file.")
    write_atomically(destination, lambda tmp: shutil.copyfile(source, tmp))
    return freeze(destination, version, lock)
