"""Ranked lists: built from top-k arrays in trec_eval order, collapsed to documents, read and written as Parquet."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

RUN_COLUMNS = ["qid", "rank", "chunk_id", "doc_id", "score"]


def order_by_trec_rule(run: pd.DataFrame, id_column: str = "chunk_id", depth: int | None = None) -> pd.DataFrame:
    """Sort each question's results by score desc, then id desc (trec_eval's tie rule), and renumber ranks from 1."""
    ordered = run.sort_values(["qid", "score", id_column], ascending=[True, False, False], kind="stable")
    ordered = ordered.assign(rank=ordered.groupby("qid", sort=False).cumcount() + 1)
    if depth is not None:
        ordered = ordered[ordered["rank"] <= depth]
    return ordered.reset_index(drop=True)


def run_from_topk(qids: Sequence[str], positions: np.ndarray, scores: np.ndarray, chunks: pd.DataFrame,
                  depth: int, drop_nonpositive: bool = False) -> pd.DataFrame:
    """A run from per-query arrays of corpus positions (-1 = none) and scores."""
    width = positions.shape[1]
    flat_positions, flat_scores = positions.reshape(-1), scores.reshape(-1).astype(np.float64)
    keep = flat_positions >= 0
    if drop_nonpositive:
        keep &= flat_scores > 0
    hits = flat_positions[keep]
    run = pd.DataFrame({
        "qid": np.repeat(np.asarray(qids, dtype=object), width)[keep],
        "rank": 0,
        "chunk_id": chunks["chunk_id"].to_numpy()[hits],
        "doc_id": chunks["doc_id"].to_numpy()[hits],
        "score": flat_scores[keep],
    }, columns=RUN_COLUMNS)
    return order_by_trec_rule(run, depth=depth)


def collapse_to_documents(run: pd.DataFrame) -> pd.DataFrame:
    """Document-grain run: each document at the rank of its first chunk, ranks renumbered from 1."""
    ordered = run.sort_values(["qid", "rank"], kind="stable")
    first = ordered.drop_duplicates(["qid", "doc_id"], keep="first")
    return first.assign(rank=first.groupby("qid", sort=False).cumcount() + 1).reset_index(drop=True)


def unmatched(run: pd.DataFrame, qrels: pd.DataFrame, id_column: str) -> str | None:
    """Why a run scores 0 against these qrels (qid, item_id) whatever its order, else None: it is empty, or none of
    its questions or none of its ids appears in them (foreign ids, or chunk ids scored as document ids)."""
    if run.empty:
        return "holds no result"
    names = {"qid": "question id", "doc_id": "document id", "chunk_id": "chunk id"}
    for column, labelled in (("qid", "qid"), (id_column, "item_id")):
        ours = pd.unique(run[column].astype(str))
        theirs = pd.unique(qrels[labelled].astype(str))
        if not pd.Series(ours).isin(theirs).any():  # hashed: np.isin on string arrays took ~90 s at 1M rows
            shown = ", ".join(repr(v) for v in sorted(ours)[:2])
            labelled_shown = ", ".join(repr(v) for v in sorted(theirs)[:2]) or "nothing"
            return (f"matches no label: none of its {len(ours)} {names.get(column, column)}s ({shown}, ...) is in "
                    f"the qrels (which have e.g. {labelled_shown})")
    return None


def report_unknown_documents(run: pd.DataFrame, documents: pd.Series, source: str, method: str) -> None:
    """Name in the log a run made elsewhere (imported, or a search endpoint's) that is empty or names no document
    of the corpus (it would score 0 without a word), and count the results naming a document the corpus lacks."""
    known = run["doc_id"].isin(documents)
    if run.empty:
        logging.warning("%s holds no result: method %s scores 0 on every metric", source, method)
    elif not known.any():
        logging.warning("%s names no document of the corpus (e.g. %r): method %s scores 0 on every metric; its ids "
                        "must be the corpus's doc_id", source, run["doc_id"].iloc[0], method)
    elif not known.all():
        logging.info("%d of %d results of %s name a document that is not in the corpus", int((~known).sum()),
                     len(run), source)
