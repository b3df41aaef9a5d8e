"""Pooling for label completion: the unjudged passages among every method's top k, as a file a person fills in
with grades; importing the filled file writes a NEW frozen question-set version and never touches the old one."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.files import write_text
from rankbench.io.frozen import freeze

POOL_COLUMNS = ["qid", "question", "chunk_id", "doc_id", "section", "title", "passage", "methods", "best_rank",
                "grade"]


def pool(runs: Mapping[str, pd.DataFrame], questions: pd.DataFrame, qrels: pd.DataFrame, chunks: pd.DataFrame,
         depth: int) -> pd.DataFrame:
    """Every (question, chunk) in some method's top `depth` that no label judges, with the methods that returned it."""
    top = pd.concat([run[run["rank"] <= depth][["qid", "chunk_id", "rank"]].assign(method=name)
                     for name, run in sorted(runs.items())], ignore_index=True)
    judged = qrels[qrels["grain"] == "chunk"][["qid", "item_id"]].rename(columns={"item_id": "chunk_id"})
    top = top.merge(judged.assign(judged=True), on=["qid", "chunk_id"], how="left")
    top = top[top["judged"].isna()]
    grouped = top.groupby(["qid", "chunk_id"], sort=True).agg(
        methods=("method", lambda m: ", ".join(sorted(set(m)))), best_rank=("rank", "min")).reset_index()
    chunk_info = chunks.assign(section=chunks["sections"].map(lambda s: s[0] if len(s) else ""))[
        ["chunk_id", "doc_id", "section", "title", "text"]].rename(columns={"text": "passage"})
    frame = grouped.merge(questions[["qid", "question"]], on="qid").merge(chunk_info, on="chunk_id")
    return frame.assign(grade="").sort_values(["qid", "best_rank", "chunk_id"], ignore_index=True)[POOL_COLUMNS]


def write_pool(frame: pd.DataFrame, path: str | Path) -> None:
    """CSV (spreadsheet-friendly) or JSONL, chosen by the extension."""
    if str(path).endswith(".jsonl"):
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in frame.to_dict(orient="records"))
    else:
        text = frame.to_csv(index=False, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    write_text(text, path)


def read_filled(path: str | Path) -> pd.DataFrame:
    """The graded rows of a filled pool file (qid, doc_id, section, grade); empty grades are skipped."""
    path = Path(path)
    try:
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            frame = pd.DataFrame(rows, dtype=object)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as error:
        raise InputError(path, None, f"cannot be read as a pool file ({error})",
                         "Fill in the file written by `rankbench pool-export` and keep its format.") from None
    missing = {"qid", "doc_id", "section", "grade"} - set(frame.columns)
    if missing:
        raise InputError(path, None, f"lacks the column(s) {', '.join(sorted(missing))}",
                         "Keep the columns of the exported pool file.")
    frame = frame.fillna("").astype({"grade": str})
    frame["line"] = range(2 if path.suffix != ".jsonl" else 1, len(frame) + (2 if path.suffix != ".jsonl" else 1))
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

    The source file is only read. Two different grades for one (question, document, section) are an error.
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
    lines = Path(source).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
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
                label = {"doc_id": row.doc_id, **({"section": row.section} if row.section else {}), "grade": row.grade}
                record.setdefault("labels", []).append(label)
                added += 1
    write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), output)
    return added, freeze(output, version, Path(lock))
