"""What changed between two recorded runs of a version, and the regression gate built on it: per method present in
both, the paired difference of each recorded metric over the shared questions (randomization test and W/T/L from
evaluation.stats), the questions that moved, the methods added or removed, the config keys and the questions (text,
labels, added, removed) that changed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rankbench.analysis.runs import config_changes, question_changes
from rankbench.evaluation.stats import TIE_TOLERANCE, paired_randomization_test, win_tie_loss
from rankbench.io.markdown import natural_order

METHOD_COLUMNS = ["method", "metric", "k", "inputs_changed", "n", "before", "after", "delta", "p", "wins", "ties",
                  "losses"]
QUESTION_COLUMNS = ["method", "metric", "k", "qid", "before", "after", "delta"]


@dataclass(frozen=True)
class RunDiff:
    """Run `before` vs run `after`: per-method deltas, the questions that moved, methods added/removed, config keys."""

    before: str
    after: str
    methods: pd.DataFrame
    questions: pd.DataFrame
    added: list[str]
    removed: list[str]
    config_changes: list[dict[str, Any]]
    # The runs (of before and after) made from a draft question-set version, not frozen: its labels may change.
    drafts: list[str] = field(default_factory=list)
    # The questions whose text, labels or fields changed, added or removed (runs.question_changes; None: the question
    # set changed, but the earlier record cannot name its questions).
    questions_changed: dict[str, list[str]] | None = field(default_factory=dict)


def diff_runs(before: pd.DataFrame, after: pd.DataFrame, before_meta: Mapping[str, Any],
              after_meta: Mapping[str, Any], n_resamples: int = 10_000, seed: int = 0) -> RunDiff:
    """Compare two runs' per-question values (method, metric, k, qid, value) on the questions both evaluate.

    delta = mean after - mean before over the shared questions, p the two-sided paired randomization test,
    wins/ties/losses the questions where `after` beats, ties and loses to `before`."""
    old_methods, new_methods = set(before["method"]), set(after["method"])
    shared = sorted(old_methods & new_methods)
    joined = before.merge(after, on=["method", "metric", "k", "qid"], suffixes=("_before", "_after"))
    joined = joined[joined["method"].isin(shared)].sort_values(["method", "metric", "k", "qid"], ignore_index=True)
    identity_before = {m: spec.get("identity") for m, spec in before_meta.get("methods", {}).items()}
    identity_after = {m: spec.get("identity") for m, spec in after_meta.get("methods", {}).items()}
    rows = []
    for (method, metric, k), group in joined.groupby(["method", "metric", "k"], sort=True):
        old, new = group["value_before"].to_numpy(), group["value_after"].to_numpy()
        wins, ties, losses = win_tie_loss(new, old)
        rows.append({"method": method, "metric": metric, "k": int(k),
                     "inputs_changed": identity_before.get(method) != identity_after.get(method),
                     "n": len(group), "before": float(old.mean()), "after": float(new.mean()),
                     "delta": float(new.mean() - old.mean()),
                     "p": paired_randomization_test(new, old, n_resamples=n_resamples, seed=seed),
                     "wins": wins, "ties": ties, "losses": losses})
    moved = joined.assign(delta=joined["value_after"] - joined["value_before"])
    moved = moved[np.abs(moved["delta"]) > TIE_TOLERANCE].rename(
        columns={"value_before": "before", "value_after": "after"})
    return RunDiff(before_meta["run_id"], after_meta["run_id"], pd.DataFrame(rows, columns=METHOD_COLUMNS),
                   moved[QUESTION_COLUMNS].reset_index(drop=True), sorted(new_methods - old_methods),
                   sorted(old_methods - new_methods), config_changes(before_meta["config"], after_meta["config"]),
                   [meta["run_id"] for meta in (before_meta, after_meta) if meta.get("draft")],
                   question_changes(before_meta, after_meta))


def by_size(moved: pd.DataFrame, worst_first: bool) -> pd.DataFrame:
    """Moved questions by the size of their change (float noise ignored), ties in natural id order (q2 before q10)."""
    ordered = moved.sort_values("qid", key=natural_order)
    return ordered.iloc[np.argsort(ordered["delta"].round(9).to_numpy() * (1 if worst_first else -1),
                                   kind="stable")]


@dataclass(frozen=True)
class GateVerdict:
    """The gate's answer: fail (exit 1) or pass, why, and the row and questions it rests on."""

    failed: bool
    reason: str
    row: dict[str, Any] | None
    worst: pd.DataFrame


def gate_verdict(diff: RunDiff, method: str, metric: str, k: int, max_drop: float, alpha: float,
                 worst: int = 5) -> GateVerdict:
    """Fail when the method is missing from either run, or its mean dropped by more than max_drop and the drop is
    significant (paired randomization p < alpha) on the shared questions; pass otherwise."""
    empty = pd.DataFrame(columns=QUESTION_COLUMNS)
    if method in diff.removed:
        return GateVerdict(True, "missing", None, empty)
    rows = diff.methods[(diff.methods["method"] == method) & (diff.methods["metric"] == metric)
                        & (diff.methods["k"] == k)]
    if rows.empty:
        return GateVerdict(True, "missing", None, empty)
    row = rows.iloc[0].to_dict()
    moved = diff.questions[(diff.questions["method"] == method) & (diff.questions["metric"] == metric)
                           & (diff.questions["k"] == k)]
    regressed = by_size(moved[moved["delta"] < 0], worst_first=True).head(worst)
    dropped, significant = -row["delta"] > max_drop, row["p"] < alpha
    reason = ("regression" if dropped and significant else "not significant" if dropped
              else "within tolerance")
    return GateVerdict(dropped and significant, reason, row, regressed.reset_index(drop=True))
