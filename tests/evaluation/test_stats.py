"""Tests of rankbench.evaluation.stats against scipy, hand-worked examples and properties."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.optimize import brentq

from rankbench.evaluation import stats
from rankbench.evaluation.scoring import summarize
from rankbench.evaluation.stats import (
    COMPARISON_COLUMNS,
    TIE_TOLERANCE,
    _paired_differences,
    bootstrap_ci,
    holm,
    paired_comparison,
    paired_randomization_test,
    randomization_p_values,
    rank_intervals,
    sorted_percentiles,
    standardized_effects,
    t_test_p_values,
    t_test_rejects,
    tiers,
    win_tie_loss,
)

# A one-row view of the library's vectorized t-test, for hand cases.


def paired_t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired t-test p-value of a - b (one row of t_test_p_values)."""
    return float(t_test_p_values(_paired_differences(a, b)[None, :])[0])


def _metric_like(rng: np.random.Generator, n: int) -> np.ndarray:
    """Per-query values shaped like an IR metric: many zeros and ones, some fractions."""
    return np.where(rng.random(n) < 0.3, rng.integers(0, 2, n), rng.random(n)).astype(np.float64)


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


# ---------------------------------------------------------------- bootstrap_ci


def test_bootstrap_matches_scipy_percentile_within_monte_carlo_error() -> None:
    rng = np.random.default_rng(7)
    values = _metric_like(rng, 60)
    low, high = bootstrap_ci(values, n_resamples=40_000, seed=123)
    ref = sps.bootstrap(
        (values,), np.mean, method="percentile", n_resamples=40_000, confidence_level=0.95, rng=99
    ).confidence_interval
    # sd of the mean ~0.05 here; Monte-Carlo error of a 2.5% quantile with 40k resamples ~0.001.
    assert low == pytest.approx(ref.low, abs=0.005)
    assert high == pytest.approx(ref.high, abs=0.005)


def test_bootstrap_reproduces_scipy_draws_with_the_same_generator() -> None:
    # Both draw rng.integers(0, n, (n_resamples, n)) from default_rng(seed): same numbers.
    values = np.random.default_rng(1).random(40)
    low, high = bootstrap_ci(values, n_resamples=5_000, confidence=0.9, seed=5)
    ref = sps.bootstrap(
        (values,), np.mean, method="percentile", n_resamples=5_000, confidence_level=0.9, rng=5
    ).confidence_interval
    assert float(low) == pytest.approx(ref.low, rel=1e-12)
    assert float(high) == pytest.approx(ref.high, rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 40, 10_000])
def test_percentiles_of_sorted_rows_are_numpys_bit_for_bit(n: int) -> None:
    """sorted_percentiles skips np.percentile's partition; every value must be np.percentile's own, ties, zeros of
    both signs and wide magnitudes included, at the bootstrap's percentiles and at the ends."""
    rng = np.random.default_rng(n)
    rows = np.concatenate([rng.normal(0, 1, (20, n)), rng.integers(-2, 3, (20, n)) / 4.0,
                           rng.lognormal(0, 8, (20, n)), np.full((2, n), -0.0), np.zeros((2, n))])
    rows.sort(axis=1)
    percentiles = [0.0, 2.5, 5.0, 25.0, 50.0, 95.0, 97.5, 100.0, 100.0 * (1.0 - 0.025), 100.0 * 0.005]
    ours = sorted_percentiles(rows, percentiles)
    for value, reference in zip(ours, np.percentile(rows, percentiles, axis=1)):
        assert value.tobytes() == reference.tobytes()
def test_bootstrap_rows_are_independent_of_each_other_and_1d_shape() -> None:
    values = np.random.default_rng(2).random((3, 25))
    low, high = bootstrap_ci(values, n_resamples=2_000, seed=9)
    assert low.shape == high.shape == (3,)
    assert np.all(low <= values.mean(axis=1)) and np.all(values.mean(axis=1) <= high)
    for i in range(3):
        lo_i, hi_i = bootstrap_ci(values[i], n_resamples=2_000, seed=9)
        assert lo_i.shape == ()
        assert float(lo_i) == pytest.approx(low[i], rel=1e-12)
        assert float(hi_i) == pytest.approx(high[i], rel=1e-12)


def test_bootstrap_chunked_resampling_is_deterministic() -> None:
    # n large enough that the resamples are split into several chunks.
    values = np.random.default_rng(3).random((2, 5_000))
    first = bootstrap_ci(values, n_resamples=1_000, seed=11)
    second = bootstrap_ci(values, n_resamples=1_000, seed=11)
    other = bootstrap_ci(values, n_resamples=1_000, seed=12)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], other[0])
    assert np.all(first[0] < values.mean(axis=1)) and np.all(values.mean(axis=1) < first[1])


def test_bootstrap_degenerate_and_invalid_inputs() -> None:
    low, high = bootstrap_ci(np.full(10, 0.5), n_resamples=100)
    assert float(low) == float(high) == 0.5
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([0.1, np.nan]))
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([]))
    with pytest.raises(ValueError):
        bootstrap_ci(np.ones(5), confidence=1.0)


# ------------------------------------------------- paired_randomization_test


@pytest.mark.parametrize("shift", [0.0, 0.1, 0.3])
def test_randomization_exact_matches_scipy_permutation_test(shift: float) -> None:
    rng = np.random.default_rng(int(shift * 10))
    a = rng.random(10)
    b = a - shift + rng.normal(0, 0.2, 10)
    ours = paired_randomization_test(a, b, exact=True)
    ref = sps.permutation_test(
        (a, b), _mean_diff, permutation_type="samples", alternative="two-sided", n_resamples=np.inf, vectorized=True
    )
    assert ref.null_distribution.size == 1024  # exact: all 2**10 sign flips
    assert ours == pytest.approx(ref.pvalue, abs=1e-12)
    # With the default n_resamples (10,000 >= 1024) exact mode is chosen automatically.
    assert paired_randomization_test(a, b) == ours


def test_randomization_exact_with_ties_and_zero_differences() -> None:
    # Metric-like values: zero differences and exactly symmetric sums (sign patterns tying |observed|).
    a = np.array([1.0, 0.5, 1 / 3, 0.0, 1.0, 0.25, 0.5, 1.0, 0.0, 0.2])
    b = np.array([0.5, 0.5, 1.0, 0.0, 0.5, 0.25, 1 / 3, 0.0, 0.0, 0.7])
    ours = paired_randomization_test(a, b, exact=True)
    ref = sps.permutation_test(
        (a, b),
        lambda x, y, axis=-1: np.abs(np.mean(x - y, axis=axis)),
        permutation_type="samples",
        alternative="greater",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert ours == pytest.approx(ref.pvalue, abs=1e-12)


def test_randomization_monte_carlo_close_to_scipy() -> None:
    rng = np.random.default_rng(4)
    a = _metric_like(rng, 40)
    b = np.clip(a - 0.08 + rng.normal(0, 0.25, 40), 0, 1)
    ours = paired_randomization_test(a, b, n_resamples=20_000, seed=1)
    ref = sps.permutation_test(
        (a, b), _mean_diff, permutation_type="samples", n_resamples=20_000, vectorized=True, rng=2
    )
    assert 0.0 < ours < 1.0
    # Standard error of a Monte-Carlo p near 0.1 with 20k draws is ~0.002.
    assert ours == pytest.approx(ref.pvalue, abs=0.012)


def test_randomization_properties() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random(30), rng.random(30)
    p = paired_randomization_test(a, b, n_resamples=999, seed=3)
    # (count + 1) / (n + 1): never zero, on the 1/1000 grid.
    assert p > 0 and round(p * 1000) == pytest.approx(p * 1000)
    assert paired_randomization_test(a, b, n_resamples=999, seed=3) == p
    assert paired_randomization_test(b, a, n_resamples=999, seed=3) == p  # symmetric
    assert paired_randomization_test(a, a.copy()) == 1.0
    far = paired_randomization_test(a + 1.0, a, n_resamples=999, seed=3)
    assert far == pytest.approx(1 / 1000)


def test_randomization_seed_changes_monte_carlo_draws_only() -> None:
    rng = np.random.default_rng(6)
    a, b = rng.random(50), rng.random(50)
    p0 = paired_randomization_test(a, b, n_resamples=2_000, seed=0)
    p1 = paired_randomization_test(a, b, n_resamples=2_000, seed=1)
    assert p0 != p1
    assert paired_randomization_test(a[:8], b[:8], seed=0) == paired_randomization_test(a[:8], b[:8], seed=1)


def test_randomization_exact_limit() -> None:
    a = np.arange(30, dtype=float)
    with pytest.raises(ValueError, match="exact"):
        paired_randomization_test(a, np.zeros(30), exact=True)
    with pytest.raises(ValueError):
        paired_randomization_test(np.ones(3), np.ones(4))


# ---------------------------------------------------------------- paired_t_test


def test_t_test_matches_scipy_ttest_rel() -> None:
    rng = np.random.default_rng(8)
    for n in (2, 5, 30, 200):
        a = rng.random(n)
        b = a + rng.normal(0.02, 0.1, n)
        assert paired_t_test(a, b) == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-9, abs=1e-15)


def test_t_test_zero_variance_cases() -> None:
    a = np.array([0.2, 0.4, 0.6])
    assert paired_t_test(a, a.copy()) == 1.0  # all differences zero: no evidence of a difference
    assert paired_t_test(a + 0.5, a) == 0.0  # all equal (up to float noise) and non-zero: t -> infinity
    assert paired_t_test(a + 1e-13, a) == 1.0  # differences within the tie tolerance count as zero
    assert np.isnan(paired_t_test(np.array([1.0]), np.array([0.0])))  # one question: variance unknown
    assert paired_t_test(np.array([1.0]), np.array([1.0])) == 1.0


# ------------------------------------------------------------------------- holm


def test_holm_worked_example() -> None:
    # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max(0.06, 0.04) = 0.06.
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], rtol=1e-12)


def test_holm_caps_and_edge_cases() -> None:
    np.testing.assert_allclose(holm([0.5, 0.6, 0.01]), [1.0, 1.0, 0.03])
    assert holm([]).shape == (0,)
    assert holm([0.2]).tolist() == [0.2]
    with pytest.raises(ValueError):
        holm([0.1, float("nan")])
    with pytest.raises(ValueError):
        holm([1.5])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=30))
def test_holm_properties(p_values: list[float]) -> None:
    p = np.asarray(p_values)
    adjusted = holm(p)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= 0)  # monotone in the raw p-values
    assert np.all(adjusted >= p) and np.all(adjusted <= 1.0)
    assert np.all(adjusted <= np.minimum(1.0, p.size * p) + 1e-15)  # never worse than Bonferroni
    perm = np.random.default_rng(len(p_values)).permutation(p.size)
    np.testing.assert_array_equal(holm(p[perm]), adjusted[perm])  # input order preserved


# ----------------------------------------------------------------- win_tie_loss


def test_win_tie_loss_with_tolerance() -> None:
    a = np.array([1.0, 0.5, 0.1 + 0.2, 0.0, 0.2])
    b = np.array([0.0, 0.5, 0.3, 1.0, 0.1])
    assert win_tie_loss(a, b) == (2, 2, 1)  # 0.1 + 0.2 vs 0.3 is a tie despite float noise
    assert win_tie_loss(a, b, tolerance=0.15) == (1, 3, 1)


# -------------------------------------------------------------- pairs of methods (summarize)


def pairs_of(wide: pd.DataFrame, baseline: str | None, n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """The pairs table summarize gives for one metric's wide per-query values (index qid, one column per method)."""
    long = wide.rename_axis("qid").reset_index().melt(id_vars="qid", var_name="method", value_name="value")
    _, pairs = summarize(long.dropna().assign(metric="m", k=0), [], baseline, n_resamples=n_resamples, seed=seed)
    return pairs[list(COMPARISON_COLUMNS)]


def _hand_built() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "bm25": [1.0, 0.0, 0.5, 1.0, 0.0, 1.0],
            "dense": [1.0, 1.0, 0.5, 0.0, 1.0, 1.0],
            "hybrid": [1.0, 1.0, 1.0, 1.0, 0.0, 1.0],
        },
        index=pd.Index([f"q{i}" for i in range(6)], name="qid"),
    )


def test_pairs_shape_columns_and_baseline_order() -> None:
    table = pairs_of(_hand_built(), baseline="dense", n_resamples=2_000)
    assert tuple(table.columns) == COMPARISON_COLUMNS
    assert list(zip(table.method_a, table.method_b, strict=True)) == [
        ("dense", "bm25"),
        ("dense", "hybrid"),
        ("bm25", "hybrid"),
    ]
    assert table.is_baseline_pair.tolist() == [True, True, False]
    assert (table.n == 6).all()
    no_baseline = pairs_of(_hand_built(), baseline=None, n_resamples=2_000)
    assert list(zip(no_baseline.method_a, no_baseline.method_b, strict=True)) == [
        ("bm25", "dense"),
        ("bm25", "hybrid"),
        ("dense", "hybrid"),
    ]
    assert not no_baseline.is_baseline_pair.any()


def test_pairs_values_on_hand_built_example() -> None:
    frame = _hand_built()
    table = pairs_of(frame, baseline="dense", n_resamples=2_000).set_index(["method_a", "method_b"])
    row = table.loc[("dense", "bm25")]
    # dense - bm25 per question: [0, 1, 0, -1, 1, 0]
    assert (row.wins, row.ties, row.losses) == (2, 3, 1)
    assert row.mean_a == pytest.approx(4.5 / 6) and row.mean_b == pytest.approx(3.5 / 6)
    assert row["diff"] == pytest.approx(1 / 6)
    assert row.below_one_question  # net difference 1 = one question's own: removing it leaves 0 (and p = 1)
    assert row.diff_low <= row["diff"] <= row.diff_high
    # Non-zero differences [1, -1, 1]: every one of the 8 sign patterns has |sum| >= 1 (exact mode).
    assert row.p_randomization == 1.0
    assert row.p_t == pytest.approx(sps.ttest_rel(frame.dense, frame.bm25).pvalue)
    hyb = table.loc[("bm25", "hybrid")]
    # bm25 - hybrid: [0, -1, -0.5, 0, 0, 0]
    assert (hyb.wins, hyb.ties, hyb.losses) == (0, 4, 2)
    assert hyb["diff"] == pytest.approx(-1.5 / 6)
    # Non-zero differences [-1, -0.5]: |sum| >= 1.5 for 2 of the 4 sign patterns.
    assert hyb.p_randomization == 0.5
    np.testing.assert_allclose(table.p_holm.to_numpy(), holm(table.p_randomization.to_numpy()))


def test_pairs_below_one_question_flag() -> None:
    """Within one question's worth: one question alone accounts for the net difference (0 < |sum d| <= max |d|)."""
    frame = pd.DataFrame(
        {
            "x": [1.0, 0.5, 0.5, 0.5],
            "y": [0.9, 0.5, 0.5, 0.5],  # one question differs: it is the whole difference
            "z": [0.0, 0.6, 0.6, 0.5],  # net 0.8 <= 1.0, question 1's own difference
            "w": [0.9, 0.4, 0.4, 0.4],  # net 0.4 > 0.1: four questions' worth
            "v": [1.0, 0.5, 0.5, 0.5],  # identical: no difference to qualify
        }
    )
    table = pairs_of(frame, baseline="x", n_resamples=500)
    table = table[table.method_a == "x"].set_index("method_b")
    assert table["below_one_question"].to_dict() == {"y": True, "z": True, "w": False, "v": False}


def test_within_one_questions_worth_is_never_significant_p100() -> None:
    """The reported case: P@100 up for most of 60 questions by a step of 0.01 or 0.02 is significant, and more than
    one question's worth (the old 1/n yardstick, 0.0167, called it less); a gap one question explains is never
    significant, whatever the metric."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 20, 60) / 100
    better = base + rng.choice([0.0, 0.01, 0.02], 60, p=[0.2, 0.4, 0.4])
    row = pairs_of(pd.DataFrame({"base": base, "better": better}), baseline="base", n_resamples=2_000).iloc[0]
    assert row["diff"] < 1 / 60 and row.p_randomization < 0.001 and not row.below_one_question
    for seed in range(200):
        rng = np.random.default_rng(seed)
        a, b = rng.random((2, 12)) * rng.integers(0, 2, (2, 12))
        result = paired_comparison(a[None, :], b[None, :], n_resamples=4096, seed=seed)
        assert not (result["below_one_question"][0] and result["p_randomization"][0] < 0.5)


def test_pairs_deterministic_and_pair_streams() -> None:
    rng = np.random.default_rng(10)
    frame = pd.DataFrame({m: _metric_like(rng, 40) for m in ("a", "b", "c")})
    first = pairs_of(frame, baseline="a", n_resamples=1_000, seed=3)
    pd.testing.assert_frame_equal(first, pairs_of(frame, baseline="a", n_resamples=1_000, seed=3))
    other = pairs_of(frame, baseline="a", n_resamples=1_000, seed=4)
    assert not np.array_equal(first.diff_low.to_numpy(), other.diff_low.to_numpy())
    # A pair's numbers do not depend on the other methods present (the resamples are shared; only
    # BLAS's summation order for one row vs several may move the last bit of a bootstrap mean).
    alone = pairs_of(frame[["a", "b"]], baseline="a", n_resamples=1_000, seed=3).iloc[0]
    assert alone.diff_low == pytest.approx(first.iloc[0].diff_low, abs=1e-12)
    assert alone.p_randomization == first.iloc[0].p_randomization


def test_pairs_single_method_and_missing_values() -> None:
    """One method has no pair; a question a method did not evaluate (NaN) leaves the pair on the others."""
    empty = pairs_of(pd.DataFrame({"bm25": [0.1, 0.2]}), baseline="bm25")
    assert empty.empty and tuple(empty.columns) == COMPARISON_COLUMNS
    frame = _hand_built()
    frame.loc["q2", "hybrid"] = np.nan
    table = pairs_of(frame, baseline=None).set_index(["method_a", "method_b"])
    assert table["n"].to_dict() == {("bm25", "dense"): 6, ("bm25", "hybrid"): 5, ("dense", "hybrid"): 5}


# ------------------------------------------------- vectorized rows (the workflow's path)


def test_randomization_rows_equal_one_row_at_a_time_when_exact() -> None:
    rng = np.random.default_rng(21)
    a = rng.integers(0, 4, size=(60, 12)) / 3.0  # metric-like: many ties and zero differences
    b = rng.integers(0, 4, size=(60, 12)) / 3.0
    rows = randomization_p_values(a - b, n_resamples=10_000)  # 2**12 <= 10,000: every row exact
    for i in range(len(a)):
        if abs((a[i] - b[i]).sum()) < 1e-9:  # observed mean 0 in the reals: p = 1 (scipy sees float noise)
            assert rows[i] == 1.0
            continue
        ref = sps.permutation_test((a[i], b[i]), lambda x, y, axis=-1: np.abs(np.mean(x - y, axis=axis)),
                                   permutation_type="samples", alternative="greater", n_resamples=np.inf,
                                   vectorized=True)
        assert rows[i] == pytest.approx(ref.pvalue, abs=1e-12), i
        assert rows[i] == paired_randomization_test(a[i], b[i])
    assert (rows[np.all(a == b, axis=1)] == 1.0).all()


def test_randomization_rows_monte_carlo_close_to_scipy_and_row_independent() -> None:
    rng = np.random.default_rng(22)
    a = np.stack([_metric_like(rng, 40) for _ in range(6)])
    b = np.clip(a - np.linspace(0, 0.2, 6)[:, None] + rng.normal(0, 0.25, a.shape), 0, 1)
    rows = randomization_p_values(a - b, n_resamples=20_000, seed=5)
    for i in range(len(a)):
        ref = sps.permutation_test((a[i], b[i]), _mean_diff, permutation_type="samples", n_resamples=20_000,
                                   vectorized=True, rng=i)
        assert rows[i] == pytest.approx(ref.pvalue, abs=0.015), i
        # Shared sign flips: a row's p is the same alone as among others.
        assert randomization_p_values((a - b)[i : i + 1], n_resamples=20_000, seed=5)[0] == rows[i]


def test_t_test_rows_match_scipy_and_edge_cases() -> None:
    rng = np.random.default_rng(23)
    a, b = rng.random((30, 25)), rng.random((30, 25))
    np.testing.assert_allclose(t_test_p_values(a - b), sps.ttest_rel(a, b, axis=1).pvalue, rtol=1e-12)
    edge = t_test_p_values(np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1e-14, -1e-14, 0.0]]))
    assert edge.tolist() == [1.0, 0.0, 1.0]
    assert np.isnan(t_test_p_values(np.array([[0.3]])))[0]


def test_paired_comparison_rows_match_the_scalar_functions() -> None:
    rng = np.random.default_rng(24)
    a = np.stack([_metric_like(rng, 30) for _ in range(4)])
    b = np.stack([_metric_like(rng, 30) for _ in range(4)])
    result = paired_comparison(a, b, n_resamples=2_000, seed=9)
    for i in range(len(a)):
        assert result["p_t"][i] == pytest.approx(paired_t_test(a[i], b[i]), abs=1e-15)
        assert (result["wins"][i], result["ties"][i], result["losses"][i]) == win_tie_loss(a[i], b[i])
        assert result["diff"][i] == pytest.approx(a[i].mean() - b[i].mean(), abs=1e-15)
        assert result["diff_low"][i] <= result["diff"][i] <= result["diff_high"][i]
    d = a - b
    assert result["below_one_question"].tolist() == ((np.abs(d.sum(axis=1)) > 1e-12)
                                                     & (np.abs(d.sum(axis=1)) <= np.abs(d).max(axis=1))).tolist()


# ---------------------------------------------------------------- standardized effect d_z


def _exact_d_z_interval(d: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The exact CI of d_z by inverting the noncentral t distribution of t = d_z sqrt(n) (scipy's nct)."""
    n = len(d)
    t_obs = d.mean() / d.std(ddof=1) * np.sqrt(n)
    def bound(q: float) -> float:
        return brentq(lambda nc: sps.nct.cdf(t_obs, n - 1, nc) - q, t_obs - 6, t_obs + 6) / np.sqrt(n)
    return bound(0.5 + confidence / 2), bound(0.5 - confidence / 2)


def test_d_z_is_mean_over_sd_and_its_interval_is_close_to_the_exact_one() -> None:
    """d_z = mean / sd (ddof 1); its normal-approximation CI within 0.03 of the exact noncentral-t CI at n = 50."""
    rng = np.random.default_rng(11)
    rows = np.stack([rng.normal(shift, 1.0, 50) for shift in (0.0, 0.3, 0.8)])
    d_z, low, high = standardized_effects(rows)
    assert np.allclose(d_z, rows.mean(axis=1) / rows.std(axis=1, ddof=1), atol=1e-15)
    for row, lo, hi in zip(rows, low, high):
        exact_low, exact_high = _exact_d_z_interval(row)
        assert abs(lo - exact_low) < 0.03 and abs(hi - exact_high) < 0.03, (lo, exact_low, hi, exact_high)


def test_d_z_interval_covers_the_true_effect_95_percent_of_the_time() -> None:
    """Simulation: normal differences with true d_z = 0.5, n = 40; coverage over 4,000 samples is 0.95 +- 0.015."""
    rng = np.random.default_rng(12)
    samples = rng.normal(0.5, 1.0, (4_000, 40))
    _, low, high = standardized_effects(samples)
    coverage = np.mean((low <= 0.5) & (high >= 0.5))
    assert abs(coverage - 0.95) < 0.015, coverage


def test_d_z_is_nan_when_the_differences_do_not_vary_and_pairs_carry_it() -> None:
    """Constant (or all-zero) differences leave d_z undefined: NaN, never inf; one question: NaN. paired_comparison
    returns d_z and its bounds per row."""
    rows = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5 + 1e-14], [0.0, 1.0, 1.0]])
    d_z, low, high = standardized_effects(rows)
    assert np.isnan(d_z[:2]).all() and np.isnan(low[:2]).all() and np.isnan(high[:2]).all()
    assert d_z[2] == pytest.approx((2 / 3) / np.std([0, 1, 1], ddof=1))
    assert np.isnan(standardized_effects(np.array([[0.3]]))[0]).all()
    result = paired_comparison(rows[2:] + 1.0, np.ones((1, 3)), n_resamples=100)
    assert result["d_z"][0] == pytest.approx(d_z[2]) and result["d_z_low"][0] < d_z[2] < result["d_z_high"][0]


# ---------------------------------------------------------------- rank intervals and tiers


def test_rank_intervals_equal_a_plain_loop_with_the_same_seed() -> None:
    """One resample at a time: the same draws (rng.integers(0, n, (R, n)) of default_rng(seed)), the methods ranked
    by mean (ties share the better rank), the lower / upper order statistics at 2.5% / 97.5%."""
    rng = np.random.default_rng(5)
    values = rng.random((2, 4, 12)) + np.array([0.0, 0.05, 0.1, 0.3])[None, :, None]
    n_resamples = 400
    rank, low, high = rank_intervals(values, n_resamples=n_resamples, seed=9)
    draws = np.random.default_rng(9).integers(0, 12, size=(n_resamples, 12))
    for g in range(2):
        observed = values[g].mean(axis=1)
        assert rank[g].tolist() == [1 + int((observed > m).sum()) for m in observed]
        resampled = []
        for idx in draws:
            means = [float(np.mean(values[g, m, idx])) for m in range(4)]
            resampled.append([1 + sum(other > mean for other in means) for mean in means])
        for m in range(4):
            ordered = sorted(r[m] for r in resampled)
            assert low[g, m] == ordered[int(np.floor(0.025 * (n_resamples - 1)))]
            assert high[g, m] == ordered[int(np.ceil(0.975 * (n_resamples - 1)))]
    again = rank_intervals(values, n_resamples=n_resamples, seed=9)
    assert all((x == y).all() for x, y in zip(again, (rank, low, high)))


def test_separated_methods_get_point_intervals_and_exchangeable_ones_wide_overlapping_intervals() -> None:
    rng = np.random.default_rng(6)
    separated = np.array([0.1, 0.5, 0.9])[:, None] + rng.normal(0, 0.05, (3, 60))
    rank, low, high = rank_intervals(separated[None], n_resamples=2_000, seed=1)
    assert rank[0].tolist() == low[0].tolist() == high[0].tolist() == [3, 2, 1]
    exchangeable = rng.random((1, 4, 30))  # four methods drawn from one distribution
    _, low, high = rank_intervals(exchangeable, n_resamples=2_000, seed=1)
    assert ((high - low) >= 2).all(), (low, high)
    assert max(low[0]) <= min(high[0])  # every interval meets every other
    copies = np.repeat(rng.random((1, 1, 20)), 3, axis=1)  # identical methods tie for rank 1 in every resample
    rank, low, high = rank_intervals(copies, n_resamples=500, seed=1)
    assert rank.tolist() == low.tolist() == high.tolist() == [[1, 1, 1]]


def test_tiers_apply_holm_over_the_pairs_with_the_best() -> None:
    means = {"a": 0.9, "b": 0.85, "c": 0.3, "d": 0.28}
    p = {frozenset("ab"): 0.2, frozenset("ac"): 0.001, frozenset("ad"): 0.001, frozenset("cd"): 0.5}
    assert tiers(means, p, 0.05) == {"a": "a", "b": "a", "c": "b", "d": "b"}
    # Unadjusted, each p = 0.02 < 0.05 would put b, c, d below a; Holm over the three pairs with a gives 0.06 each.
    close = {frozenset("ab"): 0.02, frozenset("ac"): 0.02, frozenset("ad"): 0.02}
    assert set(tiers(means, close, 0.05).values()) == {"a"}
    # A pair never compared is not significant; equal means go to the name that sorts first.
    assert tiers({"y": 0.5, "x": 0.5, "z": 0.1}, {frozenset("xz"): 0.001}, 0.05) == {"x": "a", "y": "a", "z": "b"}


def _resampled_counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """[n_resamples, n] how often each question is in each resample: the draws bootstrap_ci makes from this seed."""
    return np.vstack([counts for _, counts in stats._resample_counts(n, n_resamples, seed)])


def test_bootstrap_means_equal_the_exact_means_within_their_error_bound() -> None:
    """The split-into-integers resampled sums equal the exact rational sums within 2 ulp plus the parts' truncation
    (2**-63 of the row's largest magnitude per unit of weight), then one rounding of the division by n, for rows of
    mixed signs and magnitudes, one of them with large terms of both signs."""
    from fractions import Fraction

    rng = np.random.default_rng(3)
    rows = np.vstack([rng.random(300), rng.normal(size=300) * 1e-7, np.zeros(300),
                      np.r_[1e8, rng.random(298), -1e8]])
    got = stats._bootstrap_means(rows, 6, seed=4)
    for r, row in enumerate(rows):
        for s, weight in enumerate(_resampled_counts(300, 6, seed=4)):
            exact = sum(Fraction(int(w)) * Fraction(float(x)) for w, x in zip(weight, row))
            bound = (2 * np.spacing(abs(float(exact))) + weight.sum() * np.abs(row).max() * 2.0**-62) / 300
            mean = float(exact / 300)
            assert abs(got[r, s] - mean) <= bound + np.spacing(abs(mean)), (r, s, got[r, s], mean)
    assert (got[2] == 0).all()


def test_bootstrap_and_randomization_do_not_depend_on_blas_threads():
    """Same inputs, same numbers, whatever threads a job is given: the resampled sums and the flipped sums are not
    BLAS products, whose last bits change with OpenBLAS's thread count (they did: 1 vs 2 threads differed)."""
    script = (
        "import hashlib, numpy as np\n"
        "from rankbench.evaluation import stats\n"
        "rng = np.random.default_rng(0)\n"
        "low, high = stats.bootstrap_ci(rng.random((40, 3000)), n_resamples=1000, seed=1)\n"
        "counts = stats._count_extreme(rng.random((30, 12)), rng.integers(0, 2, size=(4096, 12)), rng.random(30) * 3)\n"
        "print(hashlib.sha256(low.tobytes() + high.tobytes() + counts.tobytes()).hexdigest())\n"
    )
    digests = {
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                       env={**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}).stdout
        for threads in ("1", "2")
    }
    assert len(digests) == 1


def _three_products_reference(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The exact sums as first written: the rows' three 21-bit parts, each part's whole product added in turn to
    zeros, and ldexp back (one array of every row's sums, no part left out)."""
    _, exponent = np.frexp(np.abs(rows).max(axis=1, initial=0.0))
    scaled = np.ldexp(rows, -exponent[:, None])
    total = np.zeros((len(rows), len(weights)))
    for part in range(3):
        scaled = np.ldexp(scaled, 21)
        integer = np.floor(scaled)
        scaled -= integer
        total += np.ldexp(integer @ weights.astype(np.float64).T, -21 * (part + 1))
    return np.ldexp(total, exponent[:, None])


@pytest.mark.parametrize("n", [30, 3000])  # resample sums up to 2**11 take two products, larger ones three
def test_blocked_sums_are_bit_for_bit_the_three_products(n: int) -> None:
    """Rows in blocks, the first two parts as one product (small weight sums), part 3 left out where it is zero, and a
    multiply instead of ldexp change no bit of the bootstrap means, nor a zero's sign: for dyadic rows (zero part 3),
    rows with -0.0, rows of every magnitude up to 2**1023."""
    rng = np.random.default_rng(11)
    rows = np.vstack([rng.random((40, n)), np.round(rng.random((40, n)) * 8) / 8 - 0.5,
                      np.where(rng.random((5, n)) < 0.5, -0.0, -rng.random((5, n))), rng.random((3, n)) * 1.7e308,
                      rng.random((3, n)) * 1e-310, np.zeros((1, n))])
    got = stats._bootstrap_means(rows, 300, seed=12)
    expected = _three_products_reference(rows, _resampled_counts(n, 300, seed=12)) / n
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("n", [9, 300])  # one chunk of resamples, and several
def test_bootstrap_and_randomization_equal_the_unblocked_computation_bit_for_bit(n):
    """The CIs (means in blocks, sorted before the percentiles) and the Monte Carlo p-values (all rows at once) are
    the numbers of the whole-array computation with np.percentile, from the same draws."""
    rng = np.random.default_rng(n)
    values = np.vstack([_metric_like(rng, n) for _ in range(30)]) - 0.4
    resamples = 2000
    idx = np.random.default_rng(5).integers(0, n, size=(resamples, n)) if n * resamples <= 1 << 21 else None
    low, high = bootstrap_ci(values, n_resamples=resamples, seed=5)
    if idx is not None:  # one chunk: the counts of one draw of every resample
        counts = np.stack([np.bincount(row, minlength=n) for row in idx])
        means = _three_products_reference(values, counts) / n
        alpha = (1.0 - 0.95) / 2.0  # as bootstrap_ci computes it (not exactly 0.025)
        ref_low, ref_high = np.percentile(means, [100.0 * alpha, 100.0 * (1.0 - alpha)], axis=1)
        assert low.tobytes() == ref_low.tobytes() and high.tobytes() == ref_high.tobytes()
    flips = np.random.default_rng(6).integers(0, 2, size=(resamples, n), dtype=np.int8)
    if n * resamples <= 1 << 21:
        null = values.sum(axis=1)[None, :] - 2.0 * _three_products_reference(values, flips).T
        thresholds = np.abs(values.sum(axis=1)) - 1e-10 * np.abs(values).sum(axis=1)
        expected = (np.count_nonzero(np.abs(null) >= thresholds[None, :], axis=0) + 1) / (resamples + 1)
        got = randomization_p_values(values, n_resamples=resamples, seed=6, exact=False)
        assert got.tobytes() == expected.tobytes()
    # rows are independent of each other, whatever block they fall in
    one_by_one = [bootstrap_ci(row, n_resamples=resamples, seed=5) for row in values]
    assert np.array_equal(low, [lo for lo, _ in one_by_one]) and np.array_equal(high, [hi for _, hi in one_by_one])


def test_t_test_and_d_z_interval_equal_scipy_stats_bit_for_bit():
    """p_t and the d_z interval from scipy.special (no scipy.stats import) are scipy.stats's numbers exactly."""
    rng = np.random.default_rng(2)
    d = rng.normal(size=(200, 23)) * rng.choice([0.01, 1.0, 30.0], size=(200, 1)) + 0.1
    t_stat = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(23))
    expected = np.minimum(1.0, 2.0 * sps.t.sf(np.abs(t_stat), df=22))
    assert t_test_p_values(d).tobytes() == expected.tobytes()
    d_z, low, _ = standardized_effects(d, 0.9)
    assert low.tobytes() == (d_z - sps.norm.ppf(0.95) * np.sqrt(1.0 / 23 + d_z**2 / (2.0 * 23))).tobytes()


def _t_test_p_values_before(d: np.ndarray) -> np.ndarray:
    """t_test_p_values as it was before its one-pass statistics (abs, ptp, std, then mean of the varied rows): the
    reference its faster arithmetic must reproduce bit for bit."""
    from scipy.special import stdtr

    n = d.shape[1]
    all_zero = np.all(np.abs(d) <= TIE_TOLERANCE, axis=1)
    constant = np.ptp(d, axis=1) <= TIE_TOLERANCE
    p = np.full(len(d), np.nan)
    if n >= 2:
        sd = d.std(axis=1, ddof=1)
        varied = ~constant
        p[varied] = np.minimum(1.0, 2.0 * stdtr(n - 1, -np.abs(d[varied].mean(axis=1) / (sd[varied] / np.sqrt(n)))))
        p[constant] = 0.0
    p[all_zero] = 1.0
    return p


@pytest.mark.parametrize("n", [1, 2, 3, 17, 256, 257, 2000])
def test_t_test_and_its_rejections_equal_the_former_arithmetic_bit_for_bit(n):
    """p from one pass of max, min, sum and squared deviations is the former p exactly, and t_test_rejects (stdtr
    only near the critical t) is exactly p < alpha, on resampled differences with ties, all-zero, constant and
    near-constant rows, at alphas that include a row's own p (a row on the boundary)."""
    rng = np.random.default_rng(n)
    pools = [rng.normal(size=50) * 0.2 + 0.02, rng.choice([1.0, 0.0, -1.0], size=30),
             np.concatenate([np.zeros(40), rng.beta(2, 5, 10)]), np.array([0.0, 1e-13, -1e-13]),
             np.array([0.5, 0.5 + 1e-13]), np.array([0.1 + 0.2 - 0.3, 0.0]), rng.normal(size=20) * 1e3]
    d = np.vstack([pool[rng.integers(0, len(pool), size=(300, n))] for pool in pools])
    d[:5] = 0.0
    d[5:10] = 0.25
    expected = _t_test_p_values_before(d)
    assert t_test_p_values(d).tobytes() == expected.tobytes()
    # The aggregate's pairs pass differences of transposed tables: strided rows, which numpy sums in another order.
    for strided in (np.asfortranarray(d), np.ascontiguousarray(d.T).T, np.repeat(d, 2, axis=1)[:, ::2]):
        assert t_test_p_values(strided).tobytes() == _t_test_p_values_before(strided).tobytes()
    finite = expected[np.isfinite(expected) & (expected > 0) & (expected < 1)]
    alphas = [0.0, 0.05, 0.05 / 11, 0.5, 1.0, 1.5] + ([float(finite[len(finite) // 2]), float(finite.min())]
                                                       if len(finite) else [])
    for alpha in alphas:
        assert np.array_equal(t_test_rejects(d, alpha), expected < alpha), alpha
    with pytest.raises(ValueError, match="NaN or infinite"):
        t_test_rejects(np.vstack([d[:3], np.full((1, n), np.inf)]), 0.05)
