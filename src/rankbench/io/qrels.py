"""Relevance judgements: the one grade check of every loader, and labels mapped to documents and chunks."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.errors import InputError

QRELS_COLUMNS = ["grain", "qid", "item_id", "grade"]


def build_qrels(labels: pd.DataFrame, chunks: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judgements per grain: a document takes its best label; a chunk the best label of a section it covers.

    A label without a section applies to every chunk of its document. Labels that reach no chunk are returned
    apart, so the report can say which evidence the chunker lost.
    """
    documents = (labels.groupby(["qid", "doc_id"], as_index=False, sort=True)["grade"].max()
                 .rename(columns={"doc_id": "item_id"}).assign(grain="document"))
    chunk_sections = chunks[["chunk_id", "doc_id", "sections"]].explode("sections").rename(
        columns={"sections": "section"})
    labels = labels.reset_index(drop=True).rename_axis("label").reset_index()
    by_section = labels[labels["section"].notna()].merge(chunk_sections, on=["doc_id", "section"])
    by_document = labels[labels["section"].isna()].merge(chunk_sections[["chunk_id", "doc_id"]].drop_duplicates(),
                                                         on="doc_id")
    matched = pd.concat([by_section, by_document], ignore_index=True)
    chunk_qrels = (matched.groupby(["qid", "chunk_id"], as_index=False, sort=True)["grade"].max()
                   .rename(columns={"chunk_id": "item_id"}).assign(grain="chunk"))
    unmapped = labels[~labels["label"].isin(matched["label"])].drop(columns="label").reset_index(drop=True)
    return pd.concat([documents, chunk_qrels], ignore_index=True)[QRELS_COLUMNS], unmapped

GRADE_BOUND = 2**31 - 2  # grades are integers in -GRADE_BOUND..GRADE_BOUND (the grade matrix's dtype holds them)


def check_grades(grades: Sequence[Any], path: Path | str | None, where: Sequence[str]) -> np.ndarray:
    """Grades as int64: the one grade check of every loader (native, BEIR, TREC). Any integer, as trec_eval
    (0 and below: not relevant); 2.0 reads as 2; 2.5, text and NaN are refused, naming ``where[i]``."""
    numeric = pd.to_numeric(pd.Series(list(grades), dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(numeric) | (numeric != np.round(numeric)) | (np.abs(numeric) > GRADE_BOUND)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(path, where[i], f"grade {grades[i]!r} is not an integer (of at most {GRADE_BOUND:,} in size)",
                         "Give integer grades, as trec_eval reads them: 0 or below is not relevant, higher is more "
                         "relevant (2.0 is read as 2).")
    return numeric.astype(np.int64)


def first_repeat(frame: pd.DataFrame, columns: list[str]) -> tuple[int, int] | None:
    """Positions (first, second) of the first row repeating an earlier row's `columns` values, else None."""
    repeats = frame.duplicated(columns, keep="first").to_numpy()
    if not repeats.any():
        return None
    second = int(np.flatnonzero(repeats)[0])
    same = (frame[columns] == frame.iloc[second][columns]).all(axis=1).to_numpy()
    return int(np.flatnonzero(same)[0]), second


def two_rows(where: Sequence[str], first: int, second: int) -> str:
    """'lines 3 and 9' from ['line 3', ..., 'line 9'] (or 'rows …')."""
    kind, a = where[first].split(" ", 1)
    return f"{kind}s {a} and {where[second].split(' ', 1)[1]}"


def check_qrels(qrels: pd.DataFrame, path: str | Path | None, where: Sequence[str],
                terms: tuple[str, str] = ("question", "id")) -> pd.DataFrame:
    """The one qrels check of every reader (TREC, Parquet, BEIR, DataFrames): grades are integers (check_grades)
    and one (qid, item_id) has one grade; exact repeats are dropped, as trec_eval reads them.

    ``where[i]`` names row i in messages (e.g. "line 12" or "row 3"), ``terms`` the qid and the item_id in the
    file format's words (BEIR: query, document).
    """
    question, item = terms
    named = [f"{w} ({question} {q!r}, {item} {i!r})" for w, q, i in zip(where, qrels["qid"], qrels["item_id"])]
    qrels = qrels.assign(grade=check_grades(qrels["grade"].tolist(), path, named)).reset_index(drop=True)
    distinct = qrels.drop_duplicates(["qid", "item_id", "grade"])
    pair = first_repeat(distinct, ["qid", "item_id"])
    if pair is not None:
        first, second = (distinct.index[i] for i in pair)
        raise InputError(path, two_rows(where, first, second),
                         f"{question} {qrels['qid'][first]!r}, {item} {qrels['item_id'][first]!r} is graded more "
                         f"than once ({qrels['grade'][first]} and {qrels['grade'][second]})",
                         f"Keep one grade per {question} and {item}.")
    return distinct.reset_index(drop=True)


def judged_qids(qrels: pd.DataFrame, known: Collection[str], qrels_path: Path | str, questions_path: Path | str,
                noun: str, fix: str) -> list[str]:
    """The qids the qrels judge, in first-judged order (the questions a version scores, as trec_eval does); a judged
    qid the questions file lacks is an error naming the first one (`noun`: `query id`, `topic`)."""
    missing = sorted(set(qrels["qid"]) - set(known))
    if missing:
        raise InputError(qrels_path, f"{noun} {missing[0]!r}", f"judges {len(missing)} {noun}(s) absent from "
                         f"{Path(questions_path).name}", fix)
    return list(dict.fromkeys(qrels["qid"]))

