"""What changed between two recorded runs of a version, and the regression gate built on it: per method present in
both, the paired difference of each recorded metric over the shared questions (randomization test and W/T/L from
evaluation.stats), the questions that moved, the methods added or removed, the config keys and the questions (text,
labels, added, removed) that changed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from rankbench.analysis.budget import normal_n
from rankbench.analysis.calibration import CAUGHT, LOST
from rankbench.analysis.run_store import config_changes, question_changes
from rankbench.errors import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK
from rankbench.evaluation.stats import (
    TIE_TOLERANCE,
    noninferiority_p_values,
    paired_randomization_test,
    win_tie_loss,
)
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
    # Per method in both runs, the questions both evaluated (0: nothing to compare, e.g. runs of other questions).
    shared_questions: dict[str, int] = field(default_factory=dict)
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
                   {method: int(joined.loc[joined["method"] == method, "qid"].nunique()) for method in shared},
                   question_changes(before_meta, after_meta))


def by_size(moved: pd.DataFrame, worst_first: bool) -> pd.DataFrame:
    """Moved questions by the size of their change (float noise ignored), ties in natural id order (q2 before q10)."""
    ordered = moved.sort_values("qid", key=natural_order)
    return ordered.iloc[np.argsort(ordered["delta"].round(9).to_numpy() * (1 if worst_first else -1),
                                   kind="stable")]


PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
GATE_EXIT_CODES = {PASS: EXIT_OK, FAIL: EXIT_FAILED, INCONCLUSIVE: EXIT_INCONCLUSIVE}


@dataclass(frozen=True)
class GateVerdict:
    """The gate's answer: pass, fail or inconclusive (exit 0, 1, 3), why, the row and questions it rests on, the
    one-sided non-inferiority p at the margin (with --margin, or when every changed question lost), and about how many
    questions would decide when the data cannot (NaN when more questions would not help)."""

    outcome: str
    reason: str
    row: dict[str, Any] | None
    worst: pd.DataFrame
    p_margin: float = np.nan
    needed: float = np.nan

    @property
    def exit_code(self) -> int:
        return GATE_EXIT_CODES[self.outcome]


def _differences(moved: pd.DataFrame, n: int) -> np.ndarray:
    """The n shared questions' differences after - before: the moved ones, and 0 for the questions that tied."""
    return np.concatenate([moved["delta"].to_numpy(dtype=np.float64), np.zeros(n - len(moved))])


def _needed(delta: float, sd: float, margin: float, alpha: float) -> float:
    """About how many questions like these would decide an undecided gate: a loss beyond the margin (delta <= -margin)
    is decided by showing the drop (two-sided test at alpha: the --max-drop branch's count for the same data), a
    smaller one by showing it within the margin (one-sided at alpha); NaN when the mean change is exactly 0 at
    margin 0, which no number of questions decides."""
    if delta + margin > 0:
        return normal_n(delta + margin, sd, 2 * alpha)
    return normal_n(delta, sd, alpha)


def gate_verdict(diff: RunDiff, method: str, metric: str, k: int, max_drop: float, alpha: float,
                 margin: float | None = None, worst: int = 5) -> GateVerdict:
    """The gate's verdict on one method's metric between two runs (docs/how-to/runs.md).

    With a margin δ: pass when the change is shown non-inferior (one-sided test of mean loss < δ at alpha), fail when
    it is shown worse (significant drop, randomization p < alpha) and not shown within δ, inconclusive otherwise.
    Without: fail on a drop beyond max_drop that is significant; a drop beyond it that is not significant passes as
    noise only when the test could have reached alpha (2**(1 - m) < alpha with m changed questions: with 5 changed
    questions p cannot go below 0.0625); a drop within max_drop where every changed question lost passes only when
    its loss is shown within max_drop. Always fail when the method is missing from either run."""
    empty = pd.DataFrame(columns=QUESTION_COLUMNS)
    rows = diff.methods[(diff.methods["method"] == method) & (diff.methods["metric"] == metric)
                        & (diff.methods["k"] == k)]
    if method in diff.removed or rows.empty:
        shares_none = method not in diff.removed and diff.shared_questions.get(method) == 0
        return GateVerdict(FAIL, "no shared question" if shares_none else "missing", None, empty)
    row = rows.iloc[0].to_dict()
    moved = diff.questions[(diff.questions["method"] == method) & (diff.questions["metric"] == metric)
                           & (diff.questions["k"] == k)]
    regressed = by_size(moved[moved["delta"] < 0], worst_first=True).head(worst).reset_index(drop=True)
    d = _differences(moved, int(row["n"]))
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    delta, changed = float(row["delta"]), int(row["wins"]) + int(row["losses"])
    shown_worse = delta < 0 and row["p"] < alpha
    if margin is not None:
        if not changed:  # the same values on every question: nothing to infer
            return GateVerdict(PASS, "unchanged", row, regressed)
        p_margin = float(noninferiority_p_values(d[None, :], margin)[0])
        if p_margin < alpha:
            return GateVerdict(PASS, "non-inferior", row, regressed, p_margin)
        if shown_worse:
            return GateVerdict(FAIL, "worse", row, regressed, p_margin)
        return GateVerdict(INCONCLUSIVE, "inconclusive", row, regressed, p_margin, _needed(delta, sd, margin, alpha))
    if -delta > max_drop:
        if shown_worse:
            return GateVerdict(FAIL, "regression", row, regressed)
        if 2.0 ** (1 - changed) >= alpha:
            return GateVerdict(INCONCLUSIVE, "too few changed", row, regressed, needed=normal_n(delta, sd, alpha))
        return GateVerdict(PASS, "not significant", row, regressed)
    if int(row["wins"]) == 0 and int(row["losses"]) > 0:
        p_margin = float(noninferiority_p_values(d[None, :], max_drop)[0])
        if p_margin >= alpha:
            return GateVerdict(INCONCLUSIVE, "only losses", row, regressed, p_margin,
                               _needed(delta, sd, max_drop, alpha))
        return GateVerdict(PASS, "within tolerance", row, regressed, p_margin)
    return GateVerdict(PASS, "within tolerance", row, regressed)


@dataclass(frozen=True)
class AbstentionCheck:
    """One direction of the abstention gate: answerable questions lost (pushed into the abstain zone; fewer is
    better) or unanswerable questions caught (more is better). before/after are shares over the n shared questions
    of that kind, `worse` how much the direction got worse (share points, < 0 when it improved), p the two-sided
    paired randomization p, p_margin the one-sided p that it got no worse than the margin."""

    direction: str
    outcome: str
    reason: str
    n: int = 0
    before: float = np.nan
    after: float = np.nan
    worse: float = np.nan
    p: float = np.nan
    p_margin: float = np.nan
    needed: float = np.nan


@dataclass(frozen=True)
class AbstentionVerdict:
    """The two-way abstention gate: fail when either direction is shown worse beyond its margin, inconclusive when
    either cannot be told, pass when both are shown within their margins (or unchanged)."""

    checks: tuple[AbstentionCheck, ...]

    @property
    def outcome(self) -> str:
        outcomes = {check.outcome for check in self.checks}
        return FAIL if FAIL in outcomes else INCONCLUSIVE if INCONCLUSIVE in outcomes else PASS

    @property
    def exit_code(self) -> int:
        return GATE_EXIT_CODES[self.outcome]


def _abstention_check(diff: RunDiff, method: str, metric: str, margin: float, alpha: float) -> AbstentionCheck:
    """One direction's verdict; the recorded values are 1 when the question sits in the abstain zone."""
    direction = "answerable lost" if metric == LOST else "unanswerable caught"
    rows = diff.methods[(diff.methods["method"] == method) & (diff.methods["metric"] == metric)]
    if rows.empty:
        return AbstentionCheck(direction, INCONCLUSIVE, "no question")
    row = rows.iloc[0]
    moved = diff.questions[(diff.questions["method"] == method) & (diff.questions["metric"] == metric)]
    sign = -1.0 if metric == LOST else 1.0  # goodness: fewer answerable lost, more unanswerable caught
    gains = sign * _differences(moved, int(row["n"]))
    unchanged = AbstentionCheck(direction, PASS, "unchanged", int(row["n"]), float(row["before"]),
                                float(row["after"]), float(-gains.mean()), float(row["p"]))
    if not len(moved):
        return unchanged
    p_margin = float(noninferiority_p_values(gains[None, :], margin)[0])
    if p_margin < alpha:
        return replace(unchanged, reason="within margin", p_margin=p_margin)
    if unchanged.worse > margin and unchanged.p < alpha:
        return replace(unchanged, outcome=FAIL, reason="worse", p_margin=p_margin)
    sd = float(gains.std(ddof=1)) if len(gains) > 1 else 0.0
    return replace(unchanged, outcome=INCONCLUSIVE, reason="inconclusive", p_margin=p_margin,
                   needed=_needed(float(gains.mean()), sd, margin, alpha))


def abstention_verdict(diff: RunDiff, method: str, lost_margin: float, caught_margin: float,
                       alpha: float) -> AbstentionVerdict:
    """The two-way abstention gate on one method between two runs (docs/how-to/runs.md): per direction, pass when
    the one-sided test shows it no worse than its margin (or nothing changed), fail when it got worse by more than
    the margin and the change is significant (randomization p < alpha), inconclusive otherwise or when the runs share
    no question of that kind (no unanswerable question: nothing to catch)."""
    return AbstentionVerdict((_abstention_check(diff, method, LOST, lost_margin, alpha),
                              _abstention_check(diff, method, CAUGHT, caught_margin, alpha)))
