"""Fusion of any number of runs into one: reciprocal rank fusion (Cormack et al., 2009) and weighted score fusion
(CombSUM / CombMNZ, Fox & Shaw 1994) over per-query min-max or z-score normalized scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankbench.errors import InputError
from rankbench.io.ranked_lists import order_by_trec_rule
from rankbench.io.trec import RunSource, read_run
from rankbench.retrieval.registry import NORMALIZATION, RRF_K

NORMALIZATIONS = ("minmax", "zscore")
FUSIONS = ("rrf", "combsum", "combmnz")
_KEYS = ["qid", "chunk_id", "doc_id"]


def _stack(runs: Sequence[pd.DataFrame], weights: Sequence[float] | None) -> pd.DataFrame:
    """All input rows under one fresh 0..n-1 index, each with its run's position and weight."""
    if not runs:
        raise ValueError("fusion needs at least one input run")
    weights = [1.0] * len(runs) if weights is None else list(weights)
    if len(weights) != len(runs):
        raise ValueError(f"{len(weights)} weights for {len(runs)} runs")
    return pd.concat([run[_KEYS + ["rank", "score"]].assign(run=i, weight=float(w))
                      for i, (run, w) in enumerate(zip(runs, weights))], ignore_index=True)


def reciprocal_rank_fusion(runs: Sequence[pd.DataFrame], k: int = RRF_K, depth: int = 100,
                           weights: Sequence[float] | None = None) -> pd.DataFrame:
    """Score each chunk by the (weighted) sum over runs of 1 / (k + rank); a chunk absent from a run adds nothing."""
    stacked = _stack(runs, weights)
    stacked["score"] = stacked["weight"] / (k + stacked["rank"])
    fused = stacked.groupby(_KEYS, as_index=False, sort=False)["score"].sum()
    return order_by_trec_rule(fused, depth=depth)


def normalize_scores(scores: pd.Series, groups: Sequence[pd.Series | np.ndarray], method: str) -> pd.Series:
    """Scores normalized within each group of rows sharing all `groups` keys: min-max to [0, 1] (all equal -> 1),
    or z-score (all equal -> 0). Group-wise transforms only, so the result is always aligned with `scores`."""
    if method not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {method!r}; use one of {', '.join(NORMALIZATIONS)}")
    grouped = scores.groupby([np.asarray(keys) for keys in groups], sort=False)
    low, high = grouped.transform("min"), grouped.transform("max")
    constant = high <= low  # tested on the extremes: a mean or std of equal floats may be off by an ulp
    if method == "minmax":
        return ((scores - low) / (high - low).mask(constant)).fillna(1.0)
    mean, std = grouped.transform("mean"), grouped.transform("std", ddof=0)
    return ((scores - mean) / std.mask(constant)).fillna(0.0)


def score_fusion(runs: Sequence[pd.DataFrame], method: str = "combsum", normalization: str = NORMALIZATION,
                 depth: int = 100, weights: Sequence[float] | None = None) -> pd.DataFrame:
    """CombSUM: weighted sum of each run's normalized scores (absent = 0); CombMNZ: that sum × the number of runs
    that returned the chunk. Scores are normalized per (run, query) first, so runs on different scales mix."""
    if method not in ("combsum", "combmnz"):
        raise ValueError(f"unknown score fusion {method!r}; use combsum or combmnz")
    stacked = _stack(runs, weights)
    normalized = normalize_scores(stacked["score"], [stacked["run"], stacked["qid"]], normalization)
    stacked["score"] = stacked["weight"] * normalized
    fused = stacked.groupby(_KEYS, as_index=False, sort=False).agg(score=("score", "sum"), hits=("run", "nunique"))
    if method == "combmnz":
        fused["score"] *= fused["hits"]
    return order_by_trec_rule(fused.drop(columns="hits"), depth=depth)


def fuse_runs(runs: Sequence[pd.DataFrame], kind: str, k: int = RRF_K, normalization: str = NORMALIZATION,
              depth: int = 100, weights: Sequence[float] | None = None) -> pd.DataFrame:
    """Runs already read, fused by a fusion type's rule: rrf with its `k`, combsum or combmnz with its
    `normalization` (each type reads its own setting and ignores the other's)."""
    if kind == "rrf":
        return reciprocal_rank_fusion(runs, k=k, depth=depth, weights=weights)
    return score_fusion(runs, kind, normalization, depth=depth, weights=weights)


def fuse(runs: Sequence[RunSource] | Mapping[str, RunSource], method: str = "rrf", **options: Any) -> pd.DataFrame:
    """Runs (files, DataFrames or {qid: {doc_id: score}} dicts; a dict of them fuses its values in order) fused into
    one, ordered by trec_eval's rule: "rrf" (options of reciprocal_rank_fusion: k, depth, weights) or "combsum" /
    "combmnz" (options of score_fusion: normalization, depth, weights)."""
    if method not in FUSIONS:
        raise InputError(None, "method", f"{method!r} is not a fusion", f"Use one of: {', '.join(FUSIONS)}.")
    named = runs.items() if isinstance(runs, Mapping) else ((f"#{i + 1}", run) for i, run in enumerate(runs))
    read = [read_run(source, name=f"run {name}") for name, source in named]
    if method == "rrf":
        return reciprocal_rank_fusion(read, **options)
    return score_fusion(read, method, **options)
