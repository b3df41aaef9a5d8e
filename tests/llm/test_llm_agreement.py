"""Weighted kappa and confusion matrices of the judge against sklearn.metrics (a test-only reference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from rankbench.analysis.agreement import (
    agreement,
    confusion,
    kappa_interval,
    weighted_kappa,
)
from rankbench.report.agreement import agreement_markdown

LABELS = [0, 1, 2, 3]


@pytest.mark.parametrize("seed", range(200))
def test_kappa_and_confusion_match_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    human = rng.integers(0, 4, n)
    # A judge that agrees more or less often, so kappa spans negative to near 1.
    judge = np.where(rng.random(n) < rng.random(), human, rng.integers(0, 4, n))
    counts = confusion(human, judge)
    np.testing.assert_array_equal(counts, confusion_matrix(human, judge, labels=LABELS))
    for weights in (None, "linear", "quadratic"):
        expected = cohen_kappa_score(human, judge, labels=LABELS, weights=weights)
        if np.isnan(expected):
            assert np.isnan(weighted_kappa(counts, weights))
        else:
            assert weighted_kappa(counts, weights) == pytest.approx(expected, abs=1e-12)


def test_perfect_and_constant_raters() -> None:
    grades = np.array([0, 1, 2, 3, 3])
    assert weighted_kappa(confusion(grades, grades), "quadratic") == pytest.approx(1.0)
    assert np.isnan(weighted_kappa(confusion(np.full(4, 2), np.full(4, 2)), "linear"))


def test_agreement_per_kind_counts_only_pairs_graded_by_both() -> None:
    judged = pd.DataFrame({
        "qid": ["a", "a", "b", "b", "c", "c"], "kind": ["x", "x", "y", "y", "y", "y"],
        "chunk_id": list("123456"), "doc_id": "d", "section": "s",
        "judge": pd.array([3, 0, 2, pd.NA, 1, 3], dtype="Int64"),
        "human": pd.array([3, 1, 2, 3, pd.NA, 0], dtype="Int64"), "seconds": [1.0, 1.0, 0.0, 0.0, 0.0, 2.0]})
    stats, cells = agreement(judged)
    by_kind = stats.set_index("kind")
    assert by_kind.loc["all", "n"] == 4 and by_kind.loc["x", "n"] == 2 and by_kind.loc["y", "n"] == 2
    assert by_kind.loc["all", "exact"] == pytest.approx(0.5)
    both = judged.dropna(subset=["judge", "human"])
    assert by_kind.loc["all", "kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(both["human"].astype(int), both["judge"].astype(int), labels=LABELS, weights="quadratic"))
    all_cells = cells[cells["kind"] == "all"].set_index(["human", "judge"])["count"]
    assert all_cells[(3, 3)] == 1 and all_cells[(0, 3)] == 1 and all_cells.sum() == 4
    report = agreement_markdown(stats, cells, judged, "v1")
    assert "| all | 4 | 0.500 |" in report and "1.33 s per pair" in report
    low, high = by_kind.loc["all", ["kappa_quadratic_low", "kappa_quadratic_high"]]
    assert low <= by_kind.loc["all", "kappa_quadratic"] <= high and f"{low:.2f} to {high:.2f}" in report


@pytest.mark.parametrize("seed", range(5))
def test_kappa_interval_is_the_percentile_bootstrap_of_sklearn_kappas(seed: int) -> None:
    """The vectorized interval equals a plain loop: sklearn's kappa on each documented resample, percentiles."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 40))
    human = rng.integers(0, 4, n)
    judge = np.where(rng.random(n) < 0.6, human, rng.integers(0, 4, n))
    draws = np.random.default_rng(seed).integers(0, n, (300, n))
    kappas = [cohen_kappa_score(human[d], judge[d], labels=LABELS, weights="quadratic") for d in draws]
    kappas = [k for k in kappas if not np.isnan(k)]
    low, high = kappa_interval(human, judge, resamples=300, seed=seed)
    assert low == pytest.approx(np.percentile(kappas, 2.5), abs=1e-12)
    assert high == pytest.approx(np.percentile(kappas, 97.5), abs=1e-12)
    assert low <= weighted_kappa(confusion(human, judge), "quadratic") <= high


def test_kappa_interval_of_perfect_and_tiny_samples() -> None:
    grades = np.array([0, 1, 2, 3, 3, 1])
    assert kappa_interval(grades, grades) == (1.0, 1.0)
    assert all(np.isnan(kappa_interval(np.array([2]), np.array([3]))))
