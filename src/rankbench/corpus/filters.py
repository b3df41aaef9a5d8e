"""Which chunks a question may see: its audience (public questions never see staff-only chunks) and its date
(only chunks in force at `as_of`). Questions sharing (audience, as_of) share one mask, so memory grows with the
number of distinct pairs, not with questions × chunks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rankbench.corpus.validity import in_force

FILTERS = ("audience", "validity")


@dataclass(frozen=True)
class ChunkMasks:
    """Allowed chunks per question: `masks[group[i]]` is question i's boolean mask over corpus positions."""

    group: np.ndarray
    masks: np.ndarray

    def rows(self, group: int) -> np.ndarray:
        """Positions (in question order) of the questions in one group."""
        return np.flatnonzero(self.group == group)


def staff_only(chunks: pd.DataFrame) -> np.ndarray:
    """Chunks only staff may see."""
    return (chunks["audience"] == "staff").to_numpy()


def chunk_masks(questions: pd.DataFrame, chunks: pd.DataFrame, filters: Sequence[str]) -> ChunkMasks | None:
    """Allowed chunks for every question under the given filters (None when no filter applies)."""
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise ValueError(f"unknown filter(s) {', '.join(unknown)}; use {', '.join(FILTERS)}")
    if not filters:
        return None
    audience = questions["audience"].fillna("public") if "audience" in filters else pd.Series("", index=questions.index)
    as_of = questions["as_of"].fillna("") if "validity" in filters else pd.Series("", index=questions.index)
    keys = pd.MultiIndex.from_arrays([audience.to_numpy(), as_of.to_numpy()])
    group, uniques = pd.factorize(keys, sort=True)
    masks = np.ones((len(uniques), len(chunks)), dtype=bool)
    staff = staff_only(chunks)
    for g, (who, date) in enumerate(uniques):
        if who == "public":
            masks[g] &= ~staff
        if date:
            masks[g] &= in_force(chunks["valid_from"].astype(object), chunks["valid_to"].astype(object),
                                  pd.Series(date, index=chunks.index, dtype=object)).to_numpy(dtype=bool)
    return ChunkMasks(group=np.asarray(group), masks=masks)
