"""Question-budget planner: for the pairs that matter, the smallest difference the current questions can detect and
the number of questions needed to detect the observed one (normal formula, checked by resampling simulation)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankbench.evaluation.scoring import ALL_KINDS, question_kinds
from rankbench.evaluation.stats import TIE_TOLERANCE, t_test_rejects

POWER = 0.8
# Simulated experiments per candidate question count (standard error of a power near 0.8: about 0.013).
SIMULATIONS = 1000
# Above this many questions the mean difference is close enough to normal that the formula is kept as it is.
MAX_SIMULATED = 2000
# Below this alpha, quantiles are read from alpha / 2 (1 - alpha / 2 loses its digits).
_TINY_ALPHA = 1e-6
# A pair that would need more than this many times the questions at hand is called practically tied, not planned.
PRACTICAL_TIE = 100
BUDGET_COLUMNS = ["dataset", "qset", "grain", "kind", "metric", "k", "pair", "method_a", "method_b", "n", "diff",
                  "sd", "family_size", "alpha", "mdd", "n_needed_normal", "n_needed", "power_at_needed",
                  "simulated"]


def _quantiles(alpha: float, power: float, n: int) -> float:
    """t_{1-alpha/2} + t_{power} with n - 1 degrees of freedom (normal for n = 1 or more than 10^6). Below alpha =
    1e-6 the upper quantile is read as minus the lower one, exact where `1 - alpha / 2` loses digits (it rounds to 1,
    an infinite quantile, below 1e-16); infinite only when alpha / 2 underflows to 0."""
    # scipy.stats.norm.ppf's and t.ppf's own functions, without scipy.stats's import (0.6 CPU s); here, not at the
    # top: the report jobs that only print pages skip scipy
    from scipy.special import ndtri, stdtrit

    def upper(quantile: Callable[[float], float]) -> float:
        return float(quantile(1 - alpha / 2) if alpha > _TINY_ALPHA else -quantile(alpha / 2))

    if n < 2 or n > 1_000_000:
        return upper(ndtri) + float(ndtri(power))
    return upper(lambda q: stdtrit(n - 1, q)) + float(stdtrit(n - 1, power))


def minimum_detectable_difference(sd: float, n: int, alpha: float, power: float = POWER) -> float:
    """Smallest true mean difference a two-sided paired t-test at `alpha` detects with `power`, over n questions."""
    return _quantiles(alpha, power, n) * sd / np.sqrt(n)


def normal_n(delta: float, sd: float, alpha: float, power: float = POWER) -> float:
    """Questions needed for a paired t-test to detect `delta` given the sd of the differences (fixed point of the
    t-quantile formula); NaN when there is no difference, 2 when every question differs by the same amount, inf
    when no number of questions would do (an alpha whose quantile is infinite)."""
    if abs(delta) <= TIE_TOLERANCE:
        return np.nan
    if sd <= TIE_TOLERANCE:
        return 2.0
    n = 2.0
    for _ in range(50):
        quantile = _quantiles(alpha, power, int(n))
        if not np.isfinite(quantile):
            return np.inf
        root = quantile * sd / abs(delta)
        # a tiny alpha's t quantile at few degrees of freedom (about 1e300 at one) overflows its square: go on from a
        # count where t is normal, whose quantile is finite
        following = max(2.0, np.ceil(root ** 2)) if root < 1e150 else 1e15
        if following == n:
            break
        n = following
    return n


def simulated_power(differences: np.ndarray, n: int, alpha: float, rng: np.random.Generator,
                    simulations: int = SIMULATIONS) -> float:
    """Share of experiments of n questions, drawn with replacement from these per-query differences, in which the
    paired t-test gives p < alpha."""
    draws = differences[rng.integers(0, len(differences), size=(simulations, n))]
    return float(t_test_rejects(draws, alpha).mean())


def simulated_n(differences: np.ndarray, alpha: float, start: int, seed: int, power: float = POWER,
                simulations: int = SIMULATIONS, max_n: int = MAX_SIMULATED) -> tuple[int, float] | None:
    """Smallest n (2..max_n) whose simulated power reaches `power`, by bisection from the formula's `start`, with
    the same seed at every n (common random numbers, so power grows with n); None when even max_n is short."""
    powers: dict[int, float] = {}

    def power_at(n: int) -> float:
        if n not in powers:
            powers[n] = simulated_power(differences, n, alpha, np.random.default_rng([seed, n]), simulations)
        return powers[n]

    low, high = max(1, start // 2), min(max_n, max(2, 2 * start))
    while low > 1 and power_at(low) >= power:
        low, high = max(1, low // 2), low
    while high < max_n and power_at(high) < power:
        low, high = high, min(max_n, 2 * high)
    if power_at(high) < power:
        return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if power_at(middle) >= power else (middle, high)
    return high, power_at(high)


def plan_pair(differences: np.ndarray, alpha: float, seed: int, power: float = POWER,
              simulations: int = SIMULATIONS) -> dict[str, Any]:
    """Budget of one pair from its paired per-query differences: mdd at the current n and questions needed."""
    n, delta = len(differences), float(differences.mean())
    sd = float(differences.std(ddof=1)) if n > 1 else 0.0
    formula = normal_n(delta, sd, alpha, power)
    row = {"n": n, "diff": delta, "sd": sd, "alpha": alpha,
           # no spread in the differences (e.g. every question tied) says nothing about the noise: no mdd
           "mdd": minimum_detectable_difference(sd, n, alpha, power) if n > 1 and sd > TIE_TOLERANCE else np.nan,
           "n_needed_normal": formula, "n_needed": formula, "power_at_needed": np.nan, "simulated": False}
    if not np.isnan(formula) and formula <= MAX_SIMULATED:
        found = simulated_n(differences, alpha, int(formula), seed, power, simulations)
        if found is not None:
            row.update(n_needed=float(found[0]), power_at_needed=found[1], simulated=True)
    return row


def pairs_that_matter(aggregate: pd.DataFrame, baseline: str | None) -> list[tuple[str, str, str]]:
    """(label, method_a, method_b) of one (grain, kind, metric, k): best vs runner-up by mean, then each method vs
    the baseline (method first, so diff = method - baseline)."""
    ranked = aggregate.sort_values(["mean", "method"], ascending=[False, True], kind="stable")["method"].tolist()
    chosen = [("best vs runner-up", ranked[0], ranked[1])] if len(ranked) > 1 else []
    if baseline in ranked:
        chosen += [("vs baseline", m, baseline) for m in sorted(ranked) if m != baseline]
    return chosen


def plan_budget(per_query: Mapping[str, pd.DataFrame], aggregate: pd.DataFrame, grain: str,
                headline: Sequence[tuple[str, int]], baseline: str | None, alpha: float, seed: int,
                simulations: int = SIMULATIONS) -> pd.DataFrame:
    """BUDGET_COLUMNS for each headline metric and kind (all questions first) and each pair that matters.

    alpha is divided by the size of the pair's Holm family, m - 1 pairs either way (the pairs with the best for best
    vs runner-up, as the tiers and the findings; the methods against the baseline otherwise): the threshold of
    Holm's first step, which the strongest difference of a family must meet. A pair listed twice (best vs runner-up
    and vs baseline) is planned once, so both rows give the same count. Each planned pair's simulation is seeded by
    (seed, its number), so the table is deterministic.
    """
    long = pd.concat([frame.assign(method=method) for method, frame in sorted(per_query.items())],
                     ignore_index=True)
    long = long[long["grain"] == grain]
    long = pd.concat([long.assign(kind=ALL_KINDS), long], ignore_index=True)
    methods = sorted(per_query)
    rows: list[dict[str, Any]] = []
    seeded = 0  # pairs planned so far: each one's simulation seed
    kinds = question_kinds(aggregate)
    kinds = [ALL_KINDS] + (kinds if len(kinds) > 1 else [])  # one kind: its rows would repeat "all"
    for metric, k in headline:
        for kind in kinds:
            means = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == kind)
                              & (aggregate["metric"] == metric) & (aggregate["k"] == k)]
            if means.empty:
                continue
            values = long[(long["kind"] == kind) & (long["metric"] == metric) & (long["k"] == k)]
            wide = values.pivot_table(index="qid", columns="method", values="value", aggfunc="first")
            # each method's values (NaN: no value for that question) as arrays, not a frame indexed per pair
            columns = dict(zip(wide.columns, wide.to_numpy(dtype=np.float64).T))
            planned: dict[tuple[str, str], dict[str, Any]] = {}
            for label, a, b in pairs_that_matter(means, baseline):
                both = ~(np.isnan(columns[a]) | np.isnan(columns[b]))
                if not both.any():
                    continue
                family = len(methods) - 1
                # A pair that matters twice (the runner-up is the baseline) is planned once: one count per pair.
                first, second = sorted((a, b))
                if (first, second) not in planned:
                    planned[first, second] = plan_pair(columns[first][both] - columns[second][both],
                                                       alpha / family, seed + seeded, simulations=simulations)
                    seeded += 1
                plan = planned[first, second]
                plan = plan if a == first else {**plan, "diff": -plan["diff"]}
                rows.append({"grain": grain, "kind": kind, "metric": metric, "k": k, "pair": label, "method_a": a,
                             "method_b": b, "family_size": family, **plan})
    table = pd.DataFrame(rows, columns=[c for c in BUDGET_COLUMNS if c not in ("dataset", "qset")])
    return table.astype({"k": np.int64, "n": np.int64, "family_size": np.int64, "simulated": bool})
