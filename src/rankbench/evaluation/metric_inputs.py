"""What a metric's formula reads: one run judged against its labels, as [question, position] matrices, and the
partial sums several formulas share, each computed once, on first use.

metrics.py builds one `MetricInput` per call and calls the formula each asked metric's row carries
(metric_names.py) on it; a formula returns a [question, len(ks)] array ([question, 1] for a whole-run metric), read
from these matrices with numpy, no loop over questions. Two codes below every grade mark a position of the grade
matrix: UNJUDGED (retrieved, no label for this question and item) and EMPTY (nothing retrieved there).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

GRADES = np.int32  # dtype of the grade matrix: its two lowest values, below every grade, are codes
EMPTY = int(np.iinfo(GRADES).min)  # nothing retrieved at this position
UNJUDGED = EMPTY + 1  # retrieved, no label for this (question, item)


def gains(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade: the grade itself (trec_eval) or 2^grade - 1 (Burges et al.); grades <= 0 and the
    codes below them gain 0."""
    positive = np.maximum(grades, 0).astype(np.float64)
    return positive if gain == "linear" else np.exp2(positive) - 1.0


def at(cumulative: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Columns of a per-position cumulative matrix at cutoffs ks (flat beyond the matrix depth)."""
    return cumulative[:, np.minimum(ks, cumulative.shape[1]) - 1]


def cumulative_dcg(gains: np.ndarray) -> np.ndarray:
    """Running DCG along positions: gain / log2(rank + 1), summed in rank order as trec_eval does."""
    discount = np.log2(np.arange(2, gains.shape[1] + 2, dtype=np.float64))
    return np.cumsum(gains / discount, axis=1)


def safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (trec_eval's convention)."""
    denominator = np.broadcast_to(denominator, numerator.shape)
    out = np.zeros(numerator.shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def condensed(grades: np.ndarray) -> np.ndarray:
    """The grade matrix with results that have no grade >= 0 removed and the rest closed up (trec_eval -J)."""
    keep = grades >= 0
    q, position = np.nonzero(keep)
    closed_up = np.full(grades.shape, EMPTY, dtype=GRADES)
    closed_up[q, np.cumsum(keep, axis=1)[q, position] - 1] = grades[q, position]
    return closed_up


@dataclass
class MetricInput:
    """A run read against its labels, one row per evaluated question. What a row of the metric table asks for is
    filled (ideal gains, non-relevant counts, documents, the depth read); the rest holds zeros or None."""

    grades: np.ndarray  # [question, position] GRADES: grade, UNJUDGED or EMPTY
    run_length: np.ndarray  # results retrieved per question
    ideal: np.ndarray  # [question, position] gains of the ideal ranking (all positive labels, grade desc)
    n_rel: np.ndarray  # relevant labels per question
    n_nonrel: np.ndarray  # judged non-relevant labels per question (grade 0 .. threshold - 1)
    documents: np.ndarray | None  # [question, position] document code of each result (-1: none), pollution only
    ks: np.ndarray  # the cutoffs, sorted
    threshold: int  # relevance threshold: grade >= threshold is relevant
    gain: str  # "linear" or "exponential"
    rbp_p: float  # RBP's persistence

    @cached_property
    def rel(self) -> np.ndarray:
        """[question, position] True where the result is relevant."""
        return self.grades >= self.threshold

    @cached_property
    def cum_rel(self) -> np.ndarray:
        """Relevant results down to each position (int32)."""
        return np.cumsum(self.rel, axis=1, dtype=np.int32)

    @cached_property
    def rel_at_k(self) -> np.ndarray:
        """Relevant results in the top k, [question, len(ks)] floats."""
        return at(self.cum_rel, self.ks).astype(np.float64)

    @cached_property
    def n_rel_col(self) -> np.ndarray:
        """Relevant labels per question as a [question, 1] float column."""
        return self.n_rel[:, None].astype(np.float64)

    @cached_property
    def k_row(self) -> np.ndarray:
        """The cutoffs as a [1, len(ks)] float row."""
        return self.ks[None, :].astype(np.float64)

    @cached_property
    def shown(self) -> np.ndarray:
        """Results in the top k: min(retrieved, k), [question, len(ks)] floats."""
        return np.minimum(self.run_length[:, None], self.ks[None, :]).astype(np.float64)

    @cached_property
    def positions(self) -> np.ndarray:
        """0-based positions of the matrix columns, as floats."""
        return np.arange(self.grades.shape[1], dtype=np.float64)

    @cached_property
    def dcg_at_k(self) -> np.ndarray:
        """DCG@k with every positive grade, whatever the threshold (trec_eval's ndcg_cut)."""
        return at(cumulative_dcg(gains(self.grades, self.gain)), self.ks)

    @cached_property
    def ideal_dcg_at_k(self) -> np.ndarray:
        """The ideal ranking's DCG@k."""
        return at(cumulative_dcg(self.ideal), self.ks)

    @cached_property
    def nonrel_before(self) -> np.ndarray:
        """Judged non-relevant results above each position; a negative grade counts as not judged (trec_eval)."""
        nonrel = (self.grades >= 0) & ~self.rel
        return np.cumsum(nonrel, axis=1, dtype=np.int64) - nonrel

    @cached_property
    def rbp_weights(self) -> np.ndarray:
        """RBP's weight of each position: (1 - p) p^(rank - 1)."""
        return (1.0 - self.rbp_p) * self.rbp_p ** self.positions

    @cached_property
    def document_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct documents in each question's top k and results of its most frequent one, [question, len(ks)].

        Each top k is sorted so that one document's results sit together (-1, nothing, first): a document starts
        where the code changes, and its count is the length of its stretch."""
        if self.documents is None:
            raise ValueError("the document of each result was not read (a pollution metric's family reads it)")
        distinct = np.zeros((len(self.documents), len(self.ks)), dtype=np.float64)
        top_count = np.zeros((len(self.documents), len(self.ks)), dtype=np.float64)
        for column, k in enumerate(self.ks.tolist()):
            top = np.sort(self.documents[:, :k], axis=1)
            present = top >= 0
            starts = present.copy()
            starts[:, 1:] &= top[:, 1:] != top[:, :-1]
            distinct[:, column] = starts.sum(axis=1)
            position = np.arange(top.shape[1])
            stretch_start = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
            top_count[:, column] = np.where(present, position - stretch_start + 1, 0).max(axis=1, initial=0)
        return distinct, top_count
