"""Pooling for label completion: the unjudged passages among every method's top k, as a file a person fills in
with grades; importing the filled file writes a NEW frozen question-set version and never touches the old one."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.files import csv_text, unguarded, write_jsonl, write_text
from rankbench.io.frozen import freeze
from rankbench.io.loaders import read_jsonl

POOL_COLUMNS = ["qid", "question", "chunk_id", "doc_id", "section", "title", "passage", "methods", "best_rank",
                "grade"]


def top_k_pool(runs: Mapping[str, pd.DataFrame], pool_depth: int) -> pd.DataFrame:
    """The pool labels are completed from (by people or an LLM judge): each (qid, chunk_id) in the top `pool_depth`
    of some run, with its doc_id, the runs that returned it and its best rank, sorted by qid and chunk_id."""
    top = pd.concat([run.loc[run["rank"] <= pool_depth, ["qid", "chunk_id", "doc_id", "rank"]].assign(method=name)
                     for name, run in sorted(runs.items())], ignore_index=True)
    return top.groupby(["qid", "chunk_id"], sort=True, as_index=False).agg(
        doc_id=("doc_id", "first"), methods=("method", lambda m: ", ".join(sorted(set(m)))), best_rank=("rank", "min"))


def unjudged_pool(runs: Mapping[str, pd.DataFrame], questions: pd.DataFrame, qrels: pd.DataFrame,
                  chunks: pd.DataFrame, pool_depth: int) -> pd.DataFrame:
    """The pooled (question, chunk) pairs that no label judges, with the passage to grade (POOL_COLUMNS)."""
    pooled = top_k_pool(runs, pool_depth).drop(columns="doc_id")
    judged = qrels[qrels["grain"] == "chunk"][["qid", "item_id"]].rename(columns={"item_id": "chunk_id"})
    pooled = pooled.merge(judged.assign(judged=True), on=["qid", "chunk_id"], how="left")
    pooled = pooled[pooled["judged"].isna()].drop(columns="judged")
    chunk_info = chunks.assign(section=chunks["sections"].map(lambda s: s[0] if len(s) else ""))[
        ["chunk_id", "doc_id", "section", "title", "text"]].rename(columns={"text": "passage"})
    frame = pooled.merge(questions[["qid", "question"]], on="qid").merge(chunk_info, on="chunk_id")
    return frame.assign(grade="").sort_values(["qid", "best_rank", "chunk_id"], ignore_index=True)[POOL_COLUMNS]


def results_pool(results: Path, qset: str, chunker: str, pool_depth: int) -> tuple[pd.DataFrame, int]:
    """The unjudged pool of a version from a dataset's results folder (its runs, questions, qrels and chunks) and the
    number of runs pooled; a version without runs is an InputError."""
    base = Path(results) / qset
    runs = {path.stem: pd.read_parquet(path) for path in sorted((base / "runs").glob("*.parquet"))}
    if not runs:
        raise InputError(base / "runs", None, "holds no run", "Run the workflow for this version first.")
    inputs = [base / "questions.parquet", base / "qrels" / f"{chunker}.parquet",
              Path(results) / "corpus" / chunker / "chunks.parquet"]
    for path in inputs:
        if not path.is_file():
            raise InputError(path, None, "does not exist", f"Run the workflow for version {qset} with chunker "
                             f"{chunker} first (or give the chunker its runs used).")
    questions, qrels, chunks = (pd.read_parquet(path) for path in inputs)
    frame = unjudged_pool(runs, questions, qrels, chunks, pool_depth)
    return frame, len(runs)


def write_pool(frame: pd.DataFrame, path: str | Path) -> None:
    """CSV (spreadsheet-friendly) or JSONL, chosen by the extension."""
    if str(path).endswith(".jsonl"):
        write_jsonl(frame.to_dict(orient="records"), path)
    else:
        write_text(csv_text(frame, quoting=csv.QUOTE_NONNUMERIC), path)


def read_filled(path: str | Path) -> pd.DataFrame:
    """The graded rows of a filled pool file (qid, doc_id, section, grade); empty grades are skipped."""
    path = Path(path)
    if path.suffix == ".jsonl":
        numbered = list(read_jsonl(path))
        frame, lines = pd.DataFrame([record for _, record in numbered], dtype=object), [n for n, _ in numbered]
    else:
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False).map(unguarded)
        except (OSError, ValueError) as error:
            raise InputError(path, None, f"cannot be read as a pool file ({error})",
                             "Fill in the file written by `rankbench pool-export` and keep its format.") from None
        lines = list(range(2, len(frame) + 2))  # line 1 is the header
    missing = {"qid", "doc_id", "section", "grade"} - set(frame.columns)
    if missing:
        raise InputError(path, None, f"lacks the column(s) {', '.join(sorted(missing))}",
                         "Keep the columns of the exported pool file.")
    frame = frame.fillna("").astype({"grade": str}).assign(line=lines)
    filled = frame[frame["grade"].str.strip() != ""].copy()
    bad = filled[~filled["grade"].str.strip().isin(["0", "1", "2", "3"])]
    if len(bad):
        row = bad.iloc[0]
        raise InputError(path, f"line {row['line']} (question {row['qid']}, {row['doc_id']})",
                         f"has grade {row['grade']!r}",
                         "Grades are whole numbers from 0 to 3, or empty for not judged.")
    filled["grade"] = filled["grade"].str.strip().astype(int)
    return filled[["qid", "doc_id", "section", "grade", "line"]]


def import_labels(filled: pd.DataFrame, source: str | Path, output: str | Path, version: str,
                  lock: str | Path) -> tuple[int, str]:
    """Write `output`: the source version with the filled labels added, register it in the lock; return
    (labels, sha256).

    The source file is only read. Two different grades for one (question, document, section) are an error. A row
    with an `evidence` quote (and its `occurrence` when the quote repeats) gives its label that evidence.
    """
    output = Path(output)
    if output.exists():
        raise InputError(output, None, "already exists",
                         "Give a new file for the new version: versions are never changed.")
    conflicts = filled.groupby(["qid", "doc_id", "section"])["grade"].nunique()
    if (conflicts > 1).any():
        qid, doc, section = conflicts[conflicts > 1].index[0]
        raise InputError(source, f"question {qid}", f"is given two different grades for {doc}#{section}",
                         "Keep one grade per passage in the filled pool file.")
    filled = filled.drop_duplicates(["qid", "doc_id", "section"])
    records = [record for _, record in read_jsonl(Path(source))]
    known = {record["qid"] for record in records}
    unknown = sorted(set(filled["qid"]) - known)
    if unknown:
        raise InputError(source, f"question {unknown[0]}", "is in the pool file but not in this version",
                         "Import the pool into the version it was exported from.")
    added = 0
    for record in records:
        existing = {(label["doc_id"], label.get("section") or "") for label in record.get("labels", [])}
        for row in filled[filled["qid"] == record["qid"]].itertuples(index=False):
            if (row.doc_id, row.section) not in existing:
                label = {"doc_id": row.doc_id, **({"section": row.section} if row.section else {}), "grade": row.grade,
                         **_evidence(row._asdict())}
                record.setdefault("labels", []).append(label)
                added += 1
    write_jsonl(records, output)
    return added, freeze(output, version, Path(lock))


def _evidence(row: Mapping[str, Any]) -> dict[str, object]:
    """A filled row's evidence as a label's keys: the quote, and the occurrence when given (none without a quote)."""
    quote, occurrence = row.get("evidence"), row.get("occurrence")
    if not isinstance(quote, str) or not quote:
        return {}
    return {"evidence": quote, **({"occurrence": int(occurrence)} if occurrence is not None and pd.notna(occurrence)
                                  else {})}
