"""Abstention calibration: how well a method's top-1 score separates answerable questions from unanswerable ones,
and, for every distinct top-1 score as a threshold, the share of answerable questions below it and of unanswerable
ones at or above it."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

TOP1_COLUMNS = ["method", "qid", "kind", "answerable", "score"]
THRESHOLD_COLUMNS = ["method", "threshold", "answerable_below", "unanswerable_above", "errors"]


def top1_scores(runs: Mapping[str, pd.DataFrame], questions: pd.DataFrame, answerable: set[str]) -> pd.DataFrame:
    """Each method's top-1 score per question (NaN when the run returned nothing), and whether it is answerable."""
    frames = []
    for method, run in sorted(runs.items()):
        first = run[run["rank"] == 1].set_index("qid")["score"]
        frames.append(pd.DataFrame({"method": method, "qid": questions["qid"], "kind": questions["kind"],
                                    "answerable": questions["qid"].isin(answerable),
                                    "score": questions["qid"].map(first).astype(float)}))
    return pd.concat(frames, ignore_index=True)[TOP1_COLUMNS]


def thresholds(top1: pd.DataFrame) -> pd.DataFrame:
    """Per method, every distinct top-1 score as a threshold, ascending: each split of the questions a threshold can
    make (any threshold between two neighbouring scores splits them as the higher one does).

    An empty result counts as below every threshold. `errors` = answerable below + unanswerable at/above, in
    questions: the threshold with the fewest is the method's best abstention point on this set. The counts come from
    each side's sorted scores (binary search), so a method costs O(n log n) whatever its number of thresholds.
    """
    frames = []
    for method, group in top1.groupby("method", sort=True):
        scores = group["score"].to_numpy(dtype=float)
        answerable = group["answerable"].to_numpy(dtype=bool)
        grid = np.unique(scores[~np.isnan(scores)])
        if not len(grid):
            continue
        filled = np.nan_to_num(scores, nan=-np.inf)
        a_scores, u_scores = np.sort(filled[answerable]), np.sort(filled[~answerable])
        a_below = np.searchsorted(a_scores, grid, side="left")
        u_above = len(u_scores) - np.searchsorted(u_scores, grid, side="left")
        frames.append(pd.DataFrame({
            "method": method, "threshold": grid,
            "answerable_below": a_below / len(a_scores) if len(a_scores) else np.nan,
            "unanswerable_above": u_above / len(u_scores) if len(u_scores) else np.nan,
            "errors": (a_below + u_above).astype(np.int64)}))
    if not frames:
        return pd.DataFrame(columns=THRESHOLD_COLUMNS)
    return pd.concat(frames, ignore_index=True)[THRESHOLD_COLUMNS]


def separation(top1: pd.DataFrame) -> pd.DataFrame:
    """Per method: median top-1 score of answerable and unanswerable questions and the AUC (probability that an
    answerable question scores above an unanswerable one; ties count half; 0.5 = no signal)."""
    rows = []
    for method, group in top1.groupby("method", sort=True):
        scores = group["score"].fillna(-np.inf).to_numpy(dtype=float)
        a, u = scores[group["answerable"].to_numpy()], scores[~group["answerable"].to_numpy()]
        auc = ((a[:, None] > u[None, :]).mean() + 0.5 * (a[:, None] == u[None, :]).mean()) if len(a) and len(u) \
            else np.nan
        rows.append({"method": method, "answerable": len(a), "unanswerable": len(u),
                     "median_answerable": float(np.median(a)) if len(a) else np.nan,
                     "median_unanswerable": float(np.median(u)) if len(u) else np.nan, "auc": auc})
    return pd.DataFrame(rows)
