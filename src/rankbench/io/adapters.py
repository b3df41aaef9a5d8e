"""Runs and qrels in the forms other toolkits hold them (ranx's Qrels/Run, PyTerrier's, ir_measures' and ranx's
frames, ir_datasets' and ir_measures' record iterables) as the tables and dicts io.trec reads. Duck-typed: none of
those libraries is imported, so they stay optional."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError

RUN_FORMS = ("a TREC or Parquet file; a DataFrame with qid, doc_id, score (rankbench), qid, docno, score[, rank] "
             "(PyTerrier), query_id, doc_id, score (ir_measures) or q_id, doc_id, score (ranx); a ranx Run; a "
             "{qid: {doc_id: score}} dict (pytrec_eval, ranx); an iterable of records with query_id, doc_id, score "
             "(ir_measures' ScoredDoc)")
QRELS_FORMS = ("a TREC or Parquet file; a DataFrame with qid, item_id or doc_id, grade (rankbench), qid, docno, "
               "label (PyTerrier), query_id, doc_id, relevance (ir_measures) or q_id, doc_id, score (ranx); a ranx "
               "Qrels; a {qid: {doc_id: grade}} dict (pytrec_eval, ranx); an iterable of records with query_id, "
               "doc_id, relevance (ir_datasets' qrels_iter(), ir_measures' Qrel)")
# Other toolkits' column names -> ours; a column is renamed only when the frame lacks ours.
_RUN_COLUMNS = {"query_id": "qid", "q_id": "qid", "docno": "doc_id"}
_QRELS_COLUMNS = {"query_id": "qid", "q_id": "qid", "docno": "doc_id", "label": "grade", "relevance": "grade",
                  "score": "grade"}


def _renamed(frame: pd.DataFrame, names: Mapping[str, str]) -> pd.DataFrame:
    """The frame with other toolkits' column names as ours, where it has no column of that name already."""
    mapping: dict[str, str] = {}
    for theirs, ours in names.items():
        if theirs in frame.columns and ours not in frame.columns and ours not in mapping.values():
            mapping[theirs] = ours
    return frame.rename(columns=mapping) if mapping else frame


def _records(source: Iterable[Any], columns: list[str]) -> pd.DataFrame:
    """Records (namedtuples such as ir_datasets' TrecQrel, or dicts) as a frame; none at all gives `columns`."""
    rows = list(source)
    if not rows:
        return pd.DataFrame(columns=columns)
    if hasattr(rows[0], "_asdict"):
        return pd.DataFrame([row._asdict() for row in rows])
    return pd.DataFrame(rows)


def _ranx(source: object) -> bool:
    """A ranx Qrels or Run (it has to_dict and comes from the ranx package)."""
    return type(source).__module__.split(".")[0] == "ranx" and callable(getattr(source, "to_dict", None))


def _plain(source: object) -> str | Path | Mapping[str, Mapping[str, Any]] | None:
    """A path or nested dict as it is, a ranx Qrels/Run as its nested dict; None for other forms."""
    if isinstance(source, (str, Path, Mapping)):
        return source
    return dict(source.to_dict()) if _ranx(source) else None  # type: ignore[attr-defined]


def _refused(source: object, what: str, forms: str, name: str) -> InputError:
    return InputError(None, name, f"is a {type(source).__module__}.{type(source).__name__}, which rankbench cannot "
                      f"read as {what}", f"Give {forms}.")


def _checked_frame(frame: pd.DataFrame, needed: tuple[str, ...], what: str, forms: str, name: str) -> pd.DataFrame:
    missing = [column for column in needed if column not in frame.columns]
    if missing:
        raise InputError(None, name, f"lacks column(s) {missing} (it has {list(map(str, frame.columns))})",
                         f"Give {what} as {forms}.")
    return frame


def adapted_run(source: object, name: str) -> str | Path | pd.DataFrame | Mapping[str, Mapping[str, float]]:
    """A run in any accepted form (RUN_FORMS) as a path, a frame with qid, doc_id, score or a nested dict; anything
    else is an InputError listing the forms (``name`` names the run)."""
    plain = _plain(source)
    if plain is not None:
        return plain
    if isinstance(source, pd.DataFrame):
        if "docno" in source.columns and "doc_id" not in source.columns and "rank" in source.columns:
            # PyTerrier's frame: pt.Evaluate hands {qid: {docno: score}} to pytrec_eval, which orders by score then
            # docno desc (trec_eval's rule) and never reads `rank`; ties ranked otherwise would score differently
            source = source.drop(columns="rank")
        return _checked_frame(_renamed(source, _RUN_COLUMNS), ("qid", "doc_id", "score"), "a run", RUN_FORMS, name)
    if isinstance(source, Iterable) and not isinstance(source, bytes):
        frame = _renamed(_records(source, ["qid", "doc_id", "score"]), _RUN_COLUMNS)
        return _checked_frame(frame, ("qid", "doc_id", "score"), "a run", RUN_FORMS, name)
    raise _refused(source, "a run", RUN_FORMS, name)


def adapted_qrels(source: object, name: str) -> str | Path | pd.DataFrame | Mapping[str, Mapping[str, int]]:
    """Qrels in any accepted form (QRELS_FORMS) as a path, a frame with qid, item_id or doc_id, grade or a nested
    dict; anything else is an InputError listing the forms."""
    plain = _plain(source)
    if plain is not None:
        return plain
    if isinstance(source, pd.DataFrame):
        frame = _renamed(source, _QRELS_COLUMNS)
    elif isinstance(source, Iterable) and not isinstance(source, bytes):
        frame = _renamed(_records(source, ["qid", "doc_id", "grade"]), _QRELS_COLUMNS)
    else:
        raise _refused(source, "qrels", QRELS_FORMS, name)
    needed = ("qid", "item_id" if "item_id" in frame.columns else "doc_id", "grade")
    return _checked_frame(frame, needed, "qrels", QRELS_FORMS, name)


def run_name(source: object) -> str | None:
    """The name a run carries: a ranx Run's name, else None."""
    name = getattr(source, "name", None) if _ranx(source) else None
    return name if isinstance(name, str) and name else None
