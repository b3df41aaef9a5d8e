"""One recommended configuration: on every axis the grid varies, the cheapest option shown no worse than the best by
δ (docs/concepts/report.md, *Recommended configuration*). Pure functions over the per-question tables; the report
layer words them (report/recommend.py).

The rule of one axis (`choose`): options sorted by a deterministic cost (index bytes, dimensions, rerank depth,
prompt tokens, k, the family's work per question), the best is the one with the highest mean (the cheaper on ties).
1. The options cheaper than the best are tested one-sided for non-inferiority to it at the margin δ, Holm over them:
   the cheapest shown is chosen (every question tied counts as shown: the two rank alike on these questions).
2. None shown: the best is tested one-sided for superiority over each cheaper option, Holm over them; shown above
   all, it is chosen "because it is better".
3. Otherwise the axis is undecided: the smallest δ these questions could show, and about how many questions would
   decide it at the configured δ. The recommended file keeps the best-scoring option until then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rankbench.analysis.budget import normal_n
from rankbench.evaluation.stats import bootstrap_ci, holm, noninferiority_p_values, win_tie_loss

# Work per question of each method family, cheapest first (a deterministic order: one inverted index, then learned
# sparse, then an encoder and a vector index, then both fused, then a model scoring the first stage's candidates).
FAMILY_COST = ("lexical", "sparse", "dense", "external", "fusion", "rerank")
CHOSEN_BY = ("identical", "cheapest", "noninferior", "better", "undecided")


@dataclass(frozen=True)
class Option:
    """One option of an axis: its label, the method whose per-question values measure it, its cost (compared in
    order, cheaper first) and figures the savings line reads (tokens, bytes)."""

    label: str
    method: str
    cost: tuple[float, ...]
    figures: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""  # what the page says beside the label (the method, the family)


@dataclass(frozen=True)
class Test:
    """One test of the choice: a against b, Δ = mean a − mean b with its bootstrap 95% CI, W/T/L of a, the one-sided
    p (non-inferiority at the margin, or superiority) Holm-adjusted over `family`."""

    a: str
    b: str
    diff: float
    low: float
    high: float
    p_holm: float
    wins: int
    ties: int
    losses: int
    n: int
    kind: str  # "noninferior" or "superior"
    family: int


@dataclass(frozen=True)
class Decision:
    """The choice on one axis: the options by cost, their means, the best, the chosen option (None: undecided) and
    how (CHOSEN_BY), the tests it rests on; undecided, the options still in the running, the smallest margin these
    questions could show and the questions that would decide it at the configured one."""

    axis: str
    metric: str
    margin: float
    options: tuple[Option, ...]
    means: Mapping[str, float]
    best: str
    chosen: str | None
    how: str
    tests: tuple[Test, ...] = ()
    remaining: tuple[str, ...] = ()
    smallest_margin: float = np.nan
    needed: float = np.nan
    note: str = ""

    @property
    def kept(self) -> Option:
        """The option the recommended file holds: the chosen one, else the best-scoring (undecided: nothing cheaper
        is shown good enough yet)."""
        label = self.chosen or self.best
        return next(option for option in self.options if option.label == label)


def _p_or(p: np.ndarray, tied: float) -> np.ndarray:
    """p-values with NaN (every question tied) replaced by `tied`."""
    return np.where(np.isnan(p), tied, p)


def _test(values: np.ndarray, a: int, b: int, labels: Sequence[str], p_holm: float, kind: str, family: int,
          resamples: int, seed: int) -> Test:
    d = values[a] - values[b]
    low, high = bootstrap_ci(d, n_resamples=resamples, seed=seed)
    wins, ties, losses = win_tie_loss(values[a], values[b])
    return Test(labels[a], labels[b], float(d.mean()), float(low), float(high), float(p_holm), wins, ties, losses,
                len(d), kind, family)


def smallest_margin(differences: np.ndarray, alpha: float) -> float:
    """The smallest δ at which these differences (cheaper − best) show non-inferiority at level alpha (the
    non-inferiority p falls as δ grows: bisection to 1e-4); NaN when every difference is 0."""
    if np.ptp(differences) <= 1e-12 and abs(differences[0]) <= 1e-12:
        return np.nan
    low, high = 0.0, float(np.abs(differences).max()) * 4 + 1.0
    if noninferiority_p_values(differences[None, :], low)[0] < alpha:
        return 0.0
    while high - low > 1e-4:
        middle = (low + high) / 2
        if noninferiority_p_values(differences[None, :], middle)[0] < alpha:
            high = middle
        else:
            low = middle
    return high


def choose(axis: str, metric: str, options: Sequence[Option], values: np.ndarray, margin: float, alpha: float,
           resamples: int = 2000, seed: int = 0, note: str = "") -> Decision:
    """The decision on one axis (the module's rule). `values` [options, questions]: each option's per-question
    values on the same questions, in `options`' order; `margin` δ >= 0 (0 without one: the cheaper one must then be
    shown above the best)."""
    order = sorted(range(len(options)), key=lambda i: (options[i].cost, options[i].label))
    options = [options[i] for i in order]
    values = np.asarray(values, dtype=float)[order]
    labels = [option.label for option in options]
    means = values.mean(axis=1)
    best = int(np.argmax(means))  # the first maximum: the cheaper of tied means
    shown_means = {label: float(mean) for label, mean in zip(labels, means)}
    common: dict[str, Any] = dict(axis=axis, metric=metric, margin=margin, options=tuple(options), means=shown_means,
                  best=labels[best], note=note)
    cheaper = list(range(best))
    if not cheaper:  # the best is the cheapest: shown no worse than the runner-up by δ?
        if len(options) == 1:
            return Decision(**common, chosen=labels[0], how="cheapest")
        runner_up = max(range(1, len(options)), key=lambda i: (means[i], -i))
        p = _p_or(noninferiority_p_values((values[0] - values[runner_up])[None, :], margin), 0.0)[0]
        test = _test(values, 0, runner_up, labels, p, "noninferior", 1, resamples, seed)
        if p < alpha:
            return Decision(**common, chosen=labels[0], how="identical" if test.wins == test.losses == 0 else
                            "cheapest", tests=(test,))
        return _undecided(common, [values[0] - values[runner_up]], (labels[0], labels[runner_up]), margin, alpha,
                          (test,))
    differences = values[cheaper] - values[best]
    tied = np.abs(differences).max(axis=1) <= 1e-12
    p_raw = _p_or(noninferiority_p_values(differences, margin), 0.0)
    p_adjusted = holm(p_raw)
    shown = [i for i, p in zip(cheaper, p_adjusted) if p < alpha]
    if shown:
        test = _test(values, shown[0], best, labels, p_adjusted[shown[0]], "noninferior", len(cheaper), resamples,
                     seed)
        return Decision(**common, chosen=labels[shown[0]], how="identical" if tied[shown[0]] else "noninferior",
                        tests=(test,))
    p_above = holm(_p_or(noninferiority_p_values(-differences, 0.0), 1.0))
    tests = tuple(_test(values, best, i, labels, p, "superior", len(cheaper), resamples, seed)
                  for i, p in zip(cheaper, p_above))
    if (p_above < alpha).all():
        return Decision(**common, chosen=labels[best], how="better", tests=tests)
    open_ = [i for i, p in zip(cheaper, p_above) if p >= alpha]
    return _undecided(common, [values[i] - values[best] for i in open_],
                      tuple(labels[i] for i in sorted({*open_, best})), margin, alpha, tests)


def _undecided(common: dict[str, Any], differences: Sequence[np.ndarray], remaining: tuple[str, ...],
               margin: float, alpha: float, tests: tuple[Test, ...]) -> Decision:
    """Undecided: for each open comparison (its per-question differences cheaper − reference), the smallest δ these
    questions show (at alpha over the family, as Holm's first step) and the questions that would decide it
    (non-inferiority at δ when the cheaper one is within δ on these questions, else the reference's superiority);
    the closest comparison's figures."""
    family = max(len(differences), 1)
    found = []
    for order, d in enumerate(differences):
        sd = float(d.std(ddof=1)) if len(d) > 1 else np.nan
        gap = float(d.mean()) + margin
        needed = normal_n(gap if gap > 0 else float(d.mean()), sd, 2 * alpha / family) if np.isfinite(sd) else np.nan
        found.append((np.nan_to_num(smallest_margin(d, alpha / family), nan=np.inf), order, needed))
    delta, _, needed = min(found)
    return Decision(**common, chosen=None, how="undecided", tests=tests, remaining=remaining,
                    smallest_margin=float(delta), needed=float(needed))


def question_values(table: pd.DataFrame, methods: Sequence[str], grain: str, metric: str, k: int) -> np.ndarray:
    """[methods, questions] per-question values of a long table (method, qid, grain, metric, k, value) on the
    questions every method has a value for, in qid order."""
    rows = table[(table["grain"] == grain) & (table["metric"] == metric) & (table["k"] == k)
                 & table["method"].isin(methods)].dropna(subset=["value"])
    wide = rows.pivot_table(index="qid", columns="method", values="value", aggfunc="first").dropna()
    missing = [m for m in methods if m not in wide.columns]
    if missing:
        raise KeyError(f"no {metric}@{k} at {grain} grain for {', '.join(missing)}")
    return wide.sort_index()[list(methods)].to_numpy().T


# --- abstention thresholds from a target -----------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """Abstention thresholds proposed for a target: t1 (abstain below: loses at most `lost` of the answerable
    questions) and t2 (answer cautiously below: catches at least `caught` of the unanswerable ones), fitted on every
    question, with held-out counts from cross-validation (each question scored by thresholds fitted without it)."""

    method: str
    t1: float
    t2: float
    lost: tuple[int, int]  # answerable questions below t1 held out: (count, of)
    caught_t1: tuple[int, int]  # unanswerable questions below t1 held out
    caught_t2: tuple[int, int]  # unanswerable questions below t2 held out
    folds: int


def fit_thresholds(answerable: np.ndarray, unanswerable: np.ndarray, caught: float, lost: float
                   ) -> tuple[float, float]:
    """t1: the largest threshold (midway between scores) with at most `lost` of the answerable scores below it;
    t2: the smallest with at least `caught` of the unanswerable scores below it, not below t1."""
    scores = np.unique(np.concatenate([answerable, unanswerable]))
    cuts = np.concatenate([[scores[0] - 1.0], (scores[:-1] + scores[1:]) / 2, [scores[-1] + 1.0]])
    lost_at = np.searchsorted(np.sort(answerable), cuts, side="left") / max(len(answerable), 1)
    caught_at = np.searchsorted(np.sort(unanswerable), cuts, side="left") / max(len(unanswerable), 1)
    t1 = float(cuts[np.flatnonzero(lost_at <= lost + 1e-12).max()])
    reach = np.flatnonzero(caught_at >= caught - 1e-12)
    t2 = float(cuts[reach.min()]) if len(reach) else float(cuts[-1])
    return t1, max(t1, t2)


def abstention_thresholds(method: str, scores: pd.DataFrame, caught: float, lost: float, folds: int = 5
                          ) -> Thresholds | None:
    """Thresholds for the target on one method's top-1 scores (columns qid, answerable, score), with held-out rates
    from `folds`-fold cross-validation stratified by answerability (folds dealt in qid order: deterministic); None
    without both answerable and unanswerable questions."""
    rows = scores.dropna(subset=["score"]).sort_values("qid")
    yes, no = rows[rows["answerable"]], rows[~rows["answerable"].astype(bool)]
    if yes.empty or no.empty:
        return None
    folds = max(2, min(folds, len(no), len(yes)))
    fold_of = pd.concat([pd.Series(np.arange(len(part)) % folds, index=part.index) for part in (yes, no)])
    counts = np.zeros(3, dtype=int)
    for fold in range(folds):
        train, held = rows[fold_of[rows.index] != fold], rows[fold_of[rows.index] == fold]
        train_yes, train_no = train[train["answerable"]], train[~train["answerable"].astype(bool)]
        if train_yes.empty or train_no.empty:
            continue
        t1, t2 = fit_thresholds(train_yes["score"].to_numpy(), train_no["score"].to_numpy(), caught, lost)
        held_yes, held_no = held[held["answerable"]]["score"], held[~held["answerable"].astype(bool)]["score"]
        counts += [(held_yes < t1).sum(), (held_no < t1).sum(), (held_no < t2).sum()]
    t1, t2 = fit_thresholds(yes["score"].to_numpy(), no["score"].to_numpy(), caught, lost)
    return Thresholds(method, t1, t2, (int(counts[0]), len(yes)), (int(counts[1]), len(no)),
                      (int(counts[2]), len(no)), folds)


def share_bounds(count: int, n: int) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 95% interval of a share of count out of n."""
    from scipy.special import betaincinv  # scipy.stats.beta.ppf's own function

    low = 0.0 if count == 0 else float(betaincinv(count, n - count + 1, 0.025))
    high = 1.0 if count == n else float(betaincinv(count + 1, n - count, 0.975))
    return low, high
