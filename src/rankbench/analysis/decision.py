"""From the table to a decision: the verdict (the best method or the group tied with it, by how much, how sure) and
the "What to do" rules over measured patterns (docs/concepts/report.md has the rule table). Computes; the report
layer words it. A rule whose pattern is not measured returns nothing: the page shows only the rules that apply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rankbench.analysis.budget import normal_n
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.evaluation.stats import holm, holm_versus_best
from rankbench.retrieval.registry import METHOD_TYPES

RULES = ("low_scores", "hybrid_above_dense", "dense_close_to_hybrid", "needs_margin", "lexical_above_dense",
         "reranker_gains", "wide_intervals")


@dataclass(frozen=True)
class Comparison:
    """Method a against method b on one metric: Δ = mean a − mean b with its 95% CI, the Holm-corrected p (over the
    family the rule speaks for), W/T/L of a, and the one-sided p that a is no worse than b by more than the margin."""

    a: str
    b: str
    mean_a: float
    mean_b: float
    diff: float
    diff_low: float
    diff_high: float
    p_holm: float
    wins: int
    ties: int
    losses: int
    n: int
    p_noninferior: float = np.nan
    p_raw: float = np.nan  # the pair's own two-sided randomization p, before Holm
    family: tuple[str, ...] = ()  # the comparisons ("x vs y") p_holm is adjusted over
    alpha: float = 0.05


@dataclass(frozen=True)
class Verdict:
    """The answer: the best method, the methods not shown different from it (tier a), its lead over the runner-up."""

    metric: str
    k: int
    best: str
    mean: float
    ci_low: float
    ci_high: float
    tied: list[str]
    lead: Comparison | None
    needed: float = np.nan  # questions that would settle the lead (NaN: settled, or no lead)


@dataclass(frozen=True)
class Advice:
    """One rule that applies: its id (RULES), the comparisons it rests on, figures it cites, and the methods the action
    names."""

    rule: str
    evidence: list[Comparison] = field(default_factory=list)
    figures: Mapping[str, float] = field(default_factory=dict)
    methods: Sequence[str] = ()


def family_of(method: str, types: Mapping[str, str]) -> str | None:
    """The registry family of a method (lexical, dense, sparse, fusion, rerank, external), None when unknown."""
    kind = types.get(method)
    return METHOD_TYPES[kind].family if kind in METHOD_TYPES else None


def _cut(frame: pd.DataFrame, grain: str, metric: str, k: int) -> pd.DataFrame:
    return frame[(frame["grain"] == grain) & (frame["kind"] == ALL_KINDS) & (frame["metric"] == metric)
                 & (frame["k"] == k)]


def compare(pairs: pd.DataFrame, a: str, b: str, p_holm: float, family: Sequence[str] = (),
            alpha: float = 0.05) -> Comparison | None:
    """a against b from the pairs rows of one (grain, kind, metric, k), seen from a, with the Holm p over `family`
    (the comparisons it was adjusted over, "x vs y"); None when never compared."""
    direct = pairs[(pairs["method_a"] == a) & (pairs["method_b"] == b)]
    swapped = pairs[(pairs["method_a"] == b) & (pairs["method_b"] == a)]
    if len(direct):
        row = direct.iloc[0]
        return Comparison(a, b, row["mean_a"], row["mean_b"], row["diff"], row["diff_low"], row["diff_high"],
                          wins=int(row["wins"]), ties=int(row["ties"]), losses=int(row["losses"]), n=int(row["n"]),
                          p_noninferior=row.get("p_noninferior_a", np.nan), p_raw=float(row["p_randomization"]),
                          p_holm=p_holm, family=tuple(family), alpha=alpha)
    if len(swapped):
        row = swapped.iloc[0]
        return Comparison(a, b, row["mean_b"], row["mean_a"], 0.0 - row["diff"], 0.0 - row["diff_high"],
                          0.0 - row["diff_low"], wins=int(row["losses"]), ties=int(row["ties"]),
                          losses=int(row["wins"]), n=int(row["n"]), p_noninferior=row.get("p_noninferior_b", np.nan),
                          p_raw=float(row["p_randomization"]), p_holm=p_holm, family=tuple(family), alpha=alpha)
    return None


def _sd(pairs: pd.DataFrame, a: str, b: str) -> float:
    """The sd of the per-question differences of a pair, from its mean difference and d_z (NaN when d_z is)."""
    rows = pairs[((pairs["method_a"] == a) & (pairs["method_b"] == b))
                 | ((pairs["method_a"] == b) & (pairs["method_b"] == a))]
    if rows.empty or pd.isna(rows.iloc[0]["d_z"]) or rows.iloc[0]["d_z"] == 0:
        return np.nan
    return float(abs(rows.iloc[0]["diff"] / rows.iloc[0]["d_z"]))


def verdict(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metric: str, k: int,
            alpha: float) -> Verdict | None:
    """The best method by mean, the methods not significantly behind it (Holm over the pairs with the best, the
    tiers' family), and its lead over the runner-up with the questions that would settle it when it is not."""
    rows = _cut(aggregate, grain, metric, k).sort_values(["mean", "method"], ascending=[False, True])
    if rows.empty:
        return None
    best = rows.iloc[0]
    scope = _cut(pairs, grain, metric, k)
    others = rows["method"].iloc[1:].tolist()
    p_values = {frozenset((x, y)): p for x, y, p in scope[["method_a", "method_b", "p_randomization"]]
                .itertuples(index=False)}
    adjusted = dict(zip(others, holm_versus_best(best["method"], others, p_values)))
    tied = [m for m in others if adjusted[m] >= alpha]
    family = [f"{best['method']} vs {m}" for m in others]
    lead = compare(scope, best["method"], others[0], adjusted[others[0]], family, alpha) if others else None
    needed = np.nan
    if lead is not None and lead.p_holm >= alpha:
        sd = _sd(scope, lead.a, lead.b)
        needed = normal_n(lead.diff, sd, alpha / len(others)) if np.isfinite(sd) else np.nan
    return Verdict(metric, k, best["method"], float(best["mean"]), float(best["ci_low"]), float(best["ci_high"]),
                   tied, lead, needed)


def _best_of(rows: pd.DataFrame, members: Sequence[str]) -> str | None:
    """The member with the highest mean (name order on ties), None when there is none."""
    chosen = rows[rows["method"].isin(members)].sort_values(["mean", "method"], ascending=[False, True])
    return None if chosen.empty else str(chosen.iloc[0]["method"])


def advice(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metric: str, k: int, alpha: float,
           types: Mapping[str, str], inputs: Mapping[str, Sequence[str]], settings: Mapping[str, Any]
           ) -> list[Advice]:
    """The rules that apply on one metric, in RULES order. Families come from the registry (`types`: method ->
    type), a reranker's first stage from `inputs` (method -> the runs it consumes). The rule comparisons form one
    Holm family (the pairs the rules test), so a rule's "clearly above" holds at alpha for all of them together.
    `settings`: the `decision` block with its defaults (low_score, rerank_gain, latency_budget_ms or None); the margin
    of "dense ≈ hybrid" is evaluation.margin's, the one the pairs were tested at."""
    rows = _cut(aggregate, grain, metric, k)
    scope = _cut(pairs, grain, metric, k)
    if rows.empty:
        return []
    by_family: dict[str, list[str]] = {}
    for method in sorted(rows["method"]):
        by_family.setdefault(family_of(method, types) or "", []).append(method)
    lexical, dense = _best_of(rows, by_family.get("lexical", [])), _best_of(rows, by_family.get("dense", []))
    hybrid = _best_of(rows, [m for m in by_family.get("fusion", []) if set(inputs.get(m, ())) & set(
        by_family.get("dense", []))])
    rerankers = [(m, first) for m in by_family.get("rerank", []) for first in inputs.get(m, ())[:1]
                 if first in set(rows["method"])]
    tested = [pair for pair in [(hybrid, dense), (lexical, dense)] + rerankers if None not in pair]
    raw = {pair: float(scope[((scope["method_a"] == pair[0]) & (scope["method_b"] == pair[1]))
                             | ((scope["method_a"] == pair[1]) & (scope["method_b"] == pair[0]))]
                       ["p_randomization"].min()) for pair in tested}
    raw = {pair: (1.0 if np.isnan(p) else p) for pair, p in raw.items()}
    adjusted = dict(zip(raw, holm(list(raw.values())))) if raw else {}
    family = [f"{x} vs {y}" for x, y in tested]

    found: list[Advice] = []
    means = rows.set_index("method")["mean"]
    if means.max() < settings["low_score"]:
        top = means.idxmax()
        found.append(Advice("low_scores", figures={"best": float(means.max()), "low_score": settings["low_score"]},
                            methods=[str(top)]))
    if hybrid and dense:
        above = compare(scope, hybrid, dense, adjusted[(hybrid, dense)], family, alpha)
        if above is not None and above.diff > 0 and above.p_holm < alpha:
            found.append(Advice("hybrid_above_dense", [above], methods=[hybrid, dense]))
        elif above is not None and above.p_holm >= alpha:  # neither clearly above the other
            close = compare(scope, dense, hybrid, adjusted[(hybrid, dense)], family, alpha)
            if close is not None and close.p_noninferior < alpha:
                found.append(Advice("dense_close_to_hybrid", [close], {"margin": _margin(scope)},
                                    methods=[dense, hybrid]))
            elif close is not None and np.isnan(_margin(scope)):  # why "dense ≈ hybrid" cannot be said
                found.append(Advice("needs_margin", [close], methods=[dense, hybrid]))
    if lexical and dense:
        above = compare(scope, lexical, dense, adjusted[(lexical, dense)], family, alpha)
        if above is not None and above.diff > 0 and above.p_holm < alpha:
            found.append(Advice("lexical_above_dense", [above], methods=[lexical, dense]))
    for reranker, first in rerankers:
        gain = compare(scope, reranker, first, adjusted[(reranker, first)], family, alpha)
        if gain is not None and gain.diff >= settings["rerank_gain"] and gain.p_holm < alpha:
            found.append(Advice("reranker_gains", [gain], {"rerank_gain": settings["rerank_gain"],
                                                           "latency_budget_ms": settings.get("latency_budget_ms")
                                                           or np.nan},
                                methods=[reranker, first]))
    settled = verdict(aggregate, pairs, grain, metric, k, alpha)
    if settled is not None and settled.lead is not None and settled.lead.p_holm >= alpha:
        runner_up = compare(scope, settled.lead.b, settled.best, settled.lead.p_holm, settled.lead.family, alpha)
        if runner_up is None or not runner_up.p_noninferior < alpha:  # shown within the margin: settled enough
            found.append(Advice("wide_intervals", [settled.lead], {"needed": settled.needed},
                                methods=[settled.best, settled.lead.b]))
    return found


def _margin(scope: pd.DataFrame) -> float:
    """The margin the pairs were tested at (NaN without one)."""
    margins = scope["margin"].dropna() if "margin" in scope else pd.Series(dtype=float)
    return float(margins.iloc[0]) if len(margins) else np.nan


@dataclass(frozen=True)
class BudgetChoice:
    """The latency budget applied to every method (served p95 against `decision.latency_budget_ms`): the methods
    over it, those without a served p95, the best method by mean, the best within the budget and, when they differ,
    what choosing it costs in quality (`loss`: it against the best, Δ with its CI, the pair's own p)."""

    budget_ms: float
    over: list[str]
    unknown: list[str]
    best: str
    best_within: str | None
    loss: Comparison | None


def budget_choice(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metric: str, k: int, alpha: float,
                  p95_ms: Mapping[str, float], budget_ms: float | None) -> BudgetChoice | None:
    """The budget's verdict on one metric (None without a budget or an evaluated method). A method without a served
    p95 is neither over nor within: it is listed apart and never chosen."""
    rows = _cut(aggregate, grain, metric, k).sort_values(["mean", "method"], ascending=[False, True])
    if not budget_ms or rows.empty:
        return None
    served = {m: float(p95_ms.get(m, np.nan)) for m in rows["method"]}
    over = [m for m, p in served.items() if p > budget_ms]
    unknown = [m for m, p in served.items() if not np.isfinite(p)]
    within = [m for m in rows["method"] if m not in over and m not in unknown]
    best = str(rows.iloc[0]["method"])
    chosen = within[0] if within else None
    loss = None
    if chosen is not None and chosen != best:
        scope = _cut(pairs, grain, metric, k)
        found = scope[((scope["method_a"] == chosen) & (scope["method_b"] == best))
                      | ((scope["method_a"] == best) & (scope["method_b"] == chosen))]
        p = float(found["p_randomization"].iloc[0]) if len(found) else np.nan
        loss = compare(scope, chosen, best, p, (f"{chosen} vs {best}",), alpha)
    return BudgetChoice(float(budget_ms), over, unknown, best, chosen, loss)
