"""Abstention calibration: how well a method's top-1 score separates answerable questions from unanswerable ones,
and, for a grid of thresholds, the share of answerable questions below it and of unanswerable ones at or above it."""

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


def thresholds(top1: pd.DataFrame, steps: int = 9) -> pd.DataFrame:
    """Per method, thresholds at evenly spaced quantiles of its top-1 scores (scales differ between methods).

    An empty result counts as below every threshold. `errors` = answerable below + unanswerable at/above, in
    questions: the threshold with the fewest is the method's best abstention point on this set.
    """
    rows = []
    for method, group in top1.groupby("method", sort=True):
        scores = group["score"].to_numpy(dtype=float)
        answerable = group["answerable"].to_numpy(dtype=bool)
        finite = scores[~np.isnan(scores)]
        if not len(finite):
            continue
        grid = np.unique(np.round(np.quantile(finite, np.linspace(0, 1, steps + 2)[1:-1]), 6))
        filled = np.nan_to_num(scores, nan=-np.inf)
        for threshold in grid:
            below = filled < threshold
            a_below = below[answerable].mean() if answerable.any() else np.nan
            u_above = (~below[~answerable]).mean() if (~answerable).any() else np.nan
            rows.append({"method": method, "threshold": float(threshold), "answerable_below": a_below,
                         "unanswerable_above": u_above,
                         "errors": int(below[answerable].sum() + (~below[~answerable]).sum())})
    return pd.DataFrame(rows, columns=THRESHOLD_COLUMNS)


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
