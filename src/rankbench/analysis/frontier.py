"""The quality-cost frontier: per method, quality (the first headline metric's mean with its 95% CI) beside what it
costs served — p95 ms of one question as the serving probe timed it (serving.parquet), the bytes and dimensions
serving it takes and its dollars per 1,000 questions (records/footprint.py), the prompt a RAG system would send at k
(characters of the top k chunks) — the Pareto set of quality against p95 ms, whether the p95 is over
`decision.latency_budget_ms`, and the cheapest method within the budget shown no worse than the best
(evaluation.margin, Holm over the pairs with the best)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.evaluation.stats import holm

FRONTIER_COLUMNS = ["method", "mean", "ci_low", "ci_high", "p95_ms", "ram_bytes", "disk_bytes", "dimensions",
                    "usd_per_1k", "prompt_chars", "pareto", "over_budget", "no_worse_than_best", "p_no_worse_holm"]


def prompt_characters(run: pd.DataFrame, chunk_lengths: Mapping[str, int], k: int) -> float:
    """Mean over questions of the characters of a run's top k chunks (NaN when the run names no chunk the corpus
    holds, e.g. an external run of documents)."""
    top = run[run["rank"] <= k]
    if "chunk_id" not in top or top.empty:
        return np.nan
    lengths = top["chunk_id"].astype(str).map(chunk_lengths)
    if lengths.isna().all():
        return np.nan
    return float(lengths.fillna(0).groupby(top["qid"]).sum().mean())


def pareto(quality: Sequence[float], cost: Sequence[float]) -> np.ndarray:
    """Which points no other point dominates (quality at least as high and cost at least as low, one strictly);
    a point of unknown cost (NaN) is on no frontier and dominates none."""
    q, c = np.asarray(quality, dtype=float), np.asarray(cost, dtype=float)
    known = ~np.isnan(c)
    better = (q[None, :] >= q[:, None]) & (c[None, :] <= c[:, None]) & ((q[None, :] > q[:, None])
                                                                     | (c[None, :] < c[:, None]))
    dominated = (better & known[None, :]).any(axis=1)
    return known & ~dominated


def frontier(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, metric: str, k: int, alpha: float,
             costs: pd.DataFrame, budget_ms: float | None = None) -> pd.DataFrame:
    """FRONTIER_COLUMNS per method, best quality first. `costs`: method, p95_ms (served), ram_bytes, disk_bytes,
    dimensions, usd_per_1k (records/footprint.py), prompt_chars (NaN where not known). over_budget: p95 above
    `budget_ms` (False without a budget or a p95). no_worse_than_best: the best itself, and every method whose
    one-sided test at the metric's margin shows it no worse than the best by more than δ (Holm over the pairs with
    the best); all False but the best without a margin."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS) & (aggregate["metric"] == metric)
                     & (aggregate["k"] == k)].sort_values(["mean", "method"], ascending=[False, True])
    table = rows[["method", "mean", "ci_low", "ci_high"]].merge(costs, on="method", how="left")
    table["pareto"] = pareto(table["mean"], table["p95_ms"])
    table["over_budget"] = (table["p95_ms"] > budget_ms).fillna(False).astype(bool) if budget_ms else False
    best = table["method"].iloc[0] if len(table) else None
    scope = pairs[(pairs["grain"] == grain) & (pairs["kind"] == ALL_KINDS) & (pairs["metric"] == metric)
                  & (pairs["k"] == k)]
    raw = []
    for other in table["method"].iloc[1:]:
        direct = scope[(scope["method_a"] == other) & (scope["method_b"] == best)]
        swapped = scope[(scope["method_a"] == best) & (scope["method_b"] == other)]
        p = (direct["p_noninferior_a"].iloc[0] if len(direct) else swapped["p_noninferior_b"].iloc[0]
             if len(swapped) else np.nan) if "p_noninferior_a" in scope else np.nan
        raw.append(1.0 if pd.isna(p) else float(p))
    adjusted = np.concatenate([[0.0], holm(raw)]) if len(table) else np.zeros(0)
    table["p_no_worse_holm"] = np.where(np.arange(len(table)) == 0, np.nan, adjusted)
    table["no_worse_than_best"] = adjusted < alpha
    return table[FRONTIER_COLUMNS].reset_index(drop=True)


def cheapest_as_good(table: pd.DataFrame) -> str | None:
    """The method with the lowest p95 ms among the best and those shown no worse than it, over-budget ones left out
    (None without timings, or when all of them are over the budget)."""
    candidates = table[table["no_worse_than_best"] & table["p95_ms"].notna() & ~table["over_budget"]]
    if candidates.empty:
        return None
    return str(candidates.sort_values(["p95_ms", "method"]).iloc[0]["method"])
