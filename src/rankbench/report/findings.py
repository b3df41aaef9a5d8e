"""Plain-sentence findings computed from the aggregate and the pairs; each names the table cell it comes from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS, question_kinds
from rankbench.evaluation.stats import format_p, holm, holm_versus_best
from rankbench.report.tables import pair_row
from rankbench.retrieval.registry import FAMILIES, METHOD_TYPES


def _name(method: str, types: Mapping[str, str]) -> str:
    kind = types.get(method, "")
    family = FAMILIES[METHOD_TYPES[kind].family] if kind in METHOD_TYPES else kind
    return f"{method} ({family})" if family else method


def _p(p_holm: float, p_raw: float, resamples: int) -> str:
    """A Holm-corrected p (a bound when its raw p is at the resampling floor)."""
    text = format_p(p_holm, p_raw, resamples)
    return f"p {text}" if text.startswith(("<", "≤")) else f"p = {text}"


def versus_best(pairs: pd.DataFrame, grain: str, metric: str, k: int, best: str,
                others: Sequence[str]) -> dict[str, float]:
    """Each other method's p against the best, Holm-corrected over the pairs with the best (all questions): the
    family the tiers use, so a finding about the best never contradicts its tier letters."""
    rows = pairs[(pairs["grain"] == grain) & (pairs["kind"] == ALL_KINDS) & (pairs["metric"] == metric)
                 & (pairs["k"] == k)]
    p_values = {frozenset((a, b)): p for a, b, p in rows[["method_a", "method_b", "p_randomization"]]
                .itertuples(index=False)}
    return dict(zip(others, holm_versus_best(best, others, p_values)))


def best_method(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metric: str, k: int,
                types: Mapping[str, str], alpha: float, resamples: int) -> str | None:
    """Who is best on one metric over all questions, and whether the lead over the runner-up is significant."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS)
                     & (aggregate["metric"] == metric) & (aggregate["k"] == k)]
    rows = rows.sort_values(["mean", "method"], ascending=[False, True])
    where = f"(→ {grain} grain, all questions, {metric_label(metric, k)})"
    if rows.empty:
        return None
    best = rows.iloc[0]
    if len(rows) == 1:
        return f"On {metric_label(metric, k)}, {best['method']} scores {best['mean']:.3f} {where}."
    tied = rows[rows["mean"] == best["mean"]]["method"].tolist()
    if len(tied) > 1:
        return f"On {metric_label(metric, k)}, {', '.join(tied)} tie for best at {best['mean']:.3f} {where}."
    second = rows.iloc[1]
    pair = pair_row(pairs, grain, ALL_KINDS, metric, k, best["method"], second["method"])
    lead = (f"On {metric_label(metric, k)}, {_name(best['method'], types)} is best with {best['mean']:.3f} "
            f"(95% CI {best['ci_low']:.3f}–{best['ci_high']:.3f}); its lead of {best['mean'] - second['mean']:+.3f} "
            f"over {second['method']} ({second['mean']:.3f})")
    if pair is None:
        return lead + f" was not tested {where}."
    p_best = versus_best(pairs, grain, metric, k, best["method"], rows["method"].iloc[1:].tolist())[second["method"]]
    verdict = "is significant" if p_best < alpha else "is not significant"
    detail = (f"Holm-corrected over the pairs with the best, {_p(p_best, pair['p_randomization'], resamples)}, "
              f"{int(pair['wins'])} questions won, {int(pair['ties'])} tied, "
              f"{int(pair['losses'])} lost")
    if pd.notna(pair.get("d_z")):
        detail += (f", standardized effect d_z = {pair['d_z']:.2f} "
                   f"(95% CI {pair['d_z_low']:.2f} to {pair['d_z_high']:.2f})")
    near = "; one question alone accounts for it" if bool(pair["below_one_question"]) else ""
    return f"{lead} {verdict} ({detail}){near} {where}."


def kind_patterns(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metrics: Sequence[tuple[str, int]],
                  types: Mapping[str, str], alpha: float, resamples: int) -> list[str]:
    """Per question kind, every pair of methods whose difference survives Holm correction (metrics grouped);
    nothing when the questions are all of one kind (the all-questions findings say it already)."""
    if len(question_kinds(aggregate)) < 2:
        return []
    found: dict[tuple[str, str, str], list[str]] = {}
    for metric, k in metrics:
        rows = pairs[(pairs["grain"] == grain) & (pairs["kind"] != ALL_KINDS) & (pairs["metric"] == metric)
                     & (pairs["k"] == k) & (pairs["p_holm"] < alpha) & (pairs["diff"] != 0)]
        for row in rows.itertuples(index=False):
            winner, loser, a, b = ((row.method_a, row.method_b, row.mean_a, row.mean_b) if row.diff > 0
                                   else (row.method_b, row.method_a, row.mean_b, row.mean_a))
            found.setdefault((row.kind, winner, loser), []).append(
                f"{metric_label(metric, k)} {a:.3f} vs {b:.3f}, "
                f"Holm {_p(row.p_holm, row.p_randomization, resamples)}, n = {row.n}")
    sentences = [f"On {kind} questions, {_name(winner, types)} beats {_name(loser, types)}: {'; '.join(values)} "
                 f"(→ per-kind tables, {kind})." for (kind, winner, loser), values in sorted(found.items())]
    if not sentences:
        names = ", ".join(metric_label(m, k) for m, k in metrics)
        sizes = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] != ALL_KINDS)]["n"]
        span = f" (kinds have {sizes.min()}–{sizes.max()} questions)" if len(sizes) else ""
        sentences.append(f"No per-kind difference between two methods survives Holm correction at α = {alpha:g} "
                         f"on {names}{span}.")
    return sentences


def within_noise(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metric: str, k: int,
                 alpha: float, resamples: int) -> str | None:
    """Which methods are not shown different from the best, and which are significantly behind it (Holm over the
    pairs with the best, as the tiers: the methods not shown different are exactly tier a's). Never worded as
    equivalence: that takes a margin (margin_finding)."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS)
                     & (aggregate["metric"] == metric) & (aggregate["k"] == k)]
    rows = rows.sort_values(["mean", "method"], ascending=[False, True])
    if len(rows) < 2:
        return None
    best = rows.iloc[0]["method"]
    adjusted = versus_best(pairs, grain, metric, k, best, rows["method"].iloc[1:].tolist())
    noise: list[str] = []
    behind: list[str] = []
    for other, p_best in adjusted.items():
        pair = pair_row(pairs, grain, ALL_KINDS, metric, k, best, other)
        if pair is not None:
            p = _p(p_best, pair["p_randomization"], resamples)
            (behind if p_best < alpha else noise).append(f"{other} (Holm {p})")
    parts = [f"On {metric_label(metric, k)}, "
             + (f"{', '.join(noise)} {'is' if len(noise) == 1 else 'are'} not shown different from {best}" if noise
                else f"every other method is significantly behind {best}")]
    if noise and behind:
        parts.append(f"; {', '.join(behind)} {'is' if len(behind) == 1 else 'are'} significantly behind it")
    return "".join(parts) + (f" (Holm over the pairs with {best}, as the tiers; → {grain} grain, all questions, "
                             f"{metric_label(metric, k)})." + (" Not shown different is not equivalent: only a "
                                                               "margin (evaluation.margin) can show “no worse”."
                                                               if noise else ""))


def margin_finding(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metric: str, k: int,
                   alpha: float) -> str | None:
    """At the metric's margin δ (evaluation.margin), which methods are shown no worse than the best by more than δ
    (one-sided test, Holm over the pairs with the best) and which of them equivalent to it (TOST, same family); None
    without a margin."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS)
                     & (aggregate["metric"] == metric) & (aggregate["k"] == k)]
    rows = rows.sort_values(["mean", "method"], ascending=[False, True])
    scope = pairs[(pairs["grain"] == grain) & (pairs["kind"] == ALL_KINDS) & (pairs["metric"] == metric)
                  & (pairs["k"] == k)]
    if len(rows) < 2 or "margin" not in scope or scope["margin"].isna().all():
        return None
    best, others = rows.iloc[0]["method"], rows["method"].iloc[1:].tolist()
    delta = float(scope["margin"].dropna().iloc[0])
    no_worse, equivalent = {}, {}
    for other in others:
        pair = pair_row(pairs, grain, ALL_KINDS, metric, k, other, best)
        no_worse[other] = 1.0 if pair is None or pd.isna(pair["p_noninferior_a"]) else pair["p_noninferior_a"]
        equivalent[other] = 1.0 if pair is None or pd.isna(pair["p_equivalent"]) else pair["p_equivalent"]
    shown = {m: p for m, p in zip(others, holm(list(no_worse.values()))) if p < alpha}
    alike = {m: p for m, p in zip(others, holm(list(equivalent.values()))) if p < alpha}
    label = metric_label(metric, k)
    where = f"(one-sided tests at δ = {delta:g}, Holm over the pairs with {best}; → {grain} grain, all questions)"
    if not shown:
        return (f"On {label}, no method is shown no worse than {best} by more than {delta:g} {where}: the questions "
                f"cannot show it, whatever the other findings say.")
    text = ", ".join(f"{m} (Holm {'p < 0.001' if p < 0.001 else f'p = {p:.3f}'})" for m, p in shown.items())
    sentence = f"On {label}, {text} {'is' if len(shown) == 1 else 'are'} no worse than {best} by more than {delta:g}"
    if alike:
        sentence += (f"; {', '.join(alike)} {'is' if len(alike) == 1 else 'are'} also equivalent to it within "
                     f"±{delta:g} (TOST)")
    rest = [m for m in others if m not in shown]
    if rest:
        sentence += f"; for {', '.join(rest)} that is not shown"
    return f"{sentence} {where}."


def findings(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]],
             types: Mapping[str, str], alpha: float, resamples: int) -> list[str]:
    """Best method per headline metric, significant per-kind patterns, methods within noise of the best, and per
    headline metric with a margin the methods shown no worse than the best.

    resamples: of the randomization test, whose floor 1/(resamples + 1) makes a p there a bound.
    """
    sentences = [best_method(aggregate, pairs, grain, m, k, types, alpha, resamples) for m, k in headline]
    sentences += kind_patterns(aggregate, pairs, grain, headline, types, alpha, resamples)
    sentences.append(within_noise(aggregate, pairs, grain, *headline[0], alpha, resamples))
    sentences += [margin_finding(aggregate, pairs, grain, m, k, alpha) for m, k in headline]
    return [s for s in sentences if s]
