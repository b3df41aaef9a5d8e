"""Fusion of several runs into one: reciprocal rank fusion (Cormack et al., 2009)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rankbench.runs import order_by_trec_rule


def reciprocal_rank_fusion(runs: Sequence[pd.DataFrame], k: int = 60, depth: int = 100) -> pd.DataFrame:
    """Score each chunk by the sum over runs of 1 / (k + rank); a chunk absent from a run adds nothing."""
    if not runs:
        raise ValueError("reciprocal rank fusion needs at least one input run")
    stacked = pd.concat([run[["qid", "chunk_id", "doc_id", "rank"]] for run in runs], ignore_index=True)
    stacked["score"] = 1.0 / (k + stacked["rank"])
    fused = stacked.groupby(["qid", "chunk_id", "doc_id"], as_index=False, sort=False)["score"].sum()
    return order_by_trec_rule(fused, depth=depth)
