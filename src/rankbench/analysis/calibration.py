"""Abstention calibration: how well a method's top-1 score separates answerable questions from unanswerable ones,
and, for every distinct top-1 score as a threshold, the share of answerable questions below it and of unanswerable
ones at or above it; for a method with `abstention.zones` [t1, t2], the graded policy: abstain below t1, answer
cautiously (with the sources) from t1 to below t2, normally from t2."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

TOP1_COLUMNS = ["method", "qid", "kind", "answerable", "score"]
THRESHOLD_COLUMNS = ["method", "threshold", "answerable_below", "unanswerable_above", "errors"]
ZONES = ("abstain", "cautious", "normal")
QUESTION_ZONE_COLUMNS = ["method", "qid", "answerable", "zone", "hit"]
ZONE_COLUMNS = ["method", "zone", "low", "high", "answerable", "unanswerable", "answerable_share",
                "unanswerable_share", "hit"]


def below(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Which top-1 scores fall below a threshold; an empty result (NaN) is below every threshold."""
    return np.nan_to_num(scores, nan=-np.inf) < threshold


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


def question_zones(top1: pd.DataFrame, zones: Mapping[str, Sequence[float]], hits: pd.DataFrame) -> pd.DataFrame:
    """Per method with zones [t1, t2] and question: its zone (abstain below t1, cautious below t2, else normal) and
    whether an answerable question has a relevant item in the top k (`hits`: method, qid, hit; NaN if unanswerable)."""
    frames = []
    for method, (low, high) in sorted(zones.items()):
        group = top1[top1["method"] == method]
        scores = group["score"].to_numpy(dtype=float)
        zone = np.where(below(scores, low), ZONES[0], np.where(below(scores, high), ZONES[1], ZONES[2]))
        frame = group[["method", "qid", "answerable"]].assign(zone=zone)
        found = hits[hits["method"] == method].set_index("qid")["hit"]
        frames.append(frame.assign(hit=frame["qid"].map(found).where(frame["answerable"]).astype(float)))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=QUESTION_ZONE_COLUMNS))[
        QUESTION_ZONE_COLUMNS]


def zone_table(per_question: pd.DataFrame, zones: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """Per method and zone: its score range, the answerable and unanswerable questions inside it (counts, and shares
    of all answerable / unanswerable questions: NaN when there are none) and the mean hit@k of its answerable ones."""
    rows = []
    for method, group in per_question.groupby("method", sort=True):
        low, high = zones[method]
        answerable = group["answerable"].to_numpy(dtype=bool)
        for zone, (start, end) in zip(ZONES, ((-np.inf, low), (low, high), (high, np.inf))):
            inside = (group["zone"] == zone).to_numpy()
            hits = group["hit"].to_numpy(dtype=float)[inside & answerable]
            rows.append({"method": method, "zone": zone, "low": float(start), "high": float(end),
                         "answerable": int((inside & answerable).sum()),
                         "unanswerable": int((inside & ~answerable).sum()),
                         "answerable_share": (inside & answerable).sum() / answerable.sum() if answerable.any()
                         else np.nan,
                         "unanswerable_share": (inside & ~answerable).sum() / (~answerable).sum()
                         if (~answerable).any() else np.nan,
                         "hit": float(hits.mean()) if len(hits) else np.nan})
    return pd.DataFrame(rows, columns=ZONE_COLUMNS)


# The run record's per-question values of the abstention gate (metric names, k = 0): 1 when an answerable question is
# pushed into the abstain zone (lost), 1 when an unanswerable one is (caught); means are the shares.
LOST, CAUGHT = "abstain-lost", "abstain-caught"


def abstention_values(per_question: pd.DataFrame) -> pd.DataFrame:
    """question_zones' rows as run-record values (method, metric, k, qid, value): `abstain-lost` over the answerable
    questions, `abstain-caught` over the unanswerable ones."""
    abstains = (per_question["zone"] == ZONES[0]).astype("float64")
    metric = np.where(per_question["answerable"].to_numpy(dtype=bool), LOST, CAUGHT)
    return pd.DataFrame({"method": per_question["method"].astype(str), "metric": metric, "k": 0,
                         "qid": per_question["qid"].astype(str), "value": abstains})


def zone_shares(zones: pd.DataFrame) -> dict[str, dict[str, dict[str, float | None]]]:
    """zone_table's shares as plain JSON for the run record: method -> zone -> answerable / unanswerable share."""
    def plain(value: float) -> float | None:
        return None if pd.isna(value) else round(float(value), 6)
    return {method: {row.zone: {"answerable": plain(row.answerable_share),
                                "unanswerable": plain(row.unanswerable_share)} for row in group.itertuples()}
            for method, group in zones.groupby("method", sort=True)}
