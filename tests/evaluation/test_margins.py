"""Non-inferiority and equivalence at a margin: the one-sided test against scipy where it must agree (symmetric
differences), its size at the margin and its power by simulation, and TOST."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from rankbench.evaluation.stats import equivalence_p_values, noninferiority_p_values

ALPHA = 0.05
SIMULATIONS = 20_000
# Three Monte Carlo standard errors of a rejection rate of ALPHA over SIMULATIONS experiments.
MC_SLACK = 3 * np.sqrt(ALPHA * (1 - ALPHA) / SIMULATIONS)


def test_symmetric_differences_give_scipys_one_sided_t_test() -> None:
    rng = np.random.default_rng(0)
    half = rng.normal(0, 0.2, (6, 15))
    centres = np.array([-0.05, -0.02, 0.0, 0.01, 0.03, 0.1])
    d = np.concatenate([half, -half], axis=1) + centres[:, None]  # symmetric about its centre: no skew
    margins = np.array([0.0, 0.01, 0.02, 0.05, 0.05, 0.1])
    reference = [scipy.stats.ttest_1samp(row, -m, alternative="greater").pvalue for row, m in zip(d, margins)]
    np.testing.assert_allclose(noninferiority_p_values(d, margins), reference, rtol=1e-9)
    tost = [max(scipy.stats.ttest_1samp(row, -m, alternative="greater").pvalue,
                scipy.stats.ttest_1samp(row, m, alternative="less").pvalue) for row, m in zip(d, margins)]
    np.testing.assert_allclose(equivalence_p_values(d, margins), tost, rtol=1e-9)


def test_rows_that_do_not_vary_and_bad_margins() -> None:
    d = np.array([[0.0, 0.0, 0.0], [-0.02, -0.02, -0.02], [0.1, 0.1, 0.1]])
    np.testing.assert_array_equal(noninferiority_p_values(d, 0.01), [np.nan, 1.0, 0.0])  # all ties: no test
    assert np.isnan(noninferiority_p_values(np.array([[0.3]]), 0.1)[0])  # one question: no test
    with pytest.raises(ValueError, match="margins must be >= 0"):
        noninferiority_p_values(d, -0.1)


# Per-question differences of a metric: mostly ties, a few large moves either way, skewed; shifted so that their
# mean is exactly -margin (the boundary of H0, where the size is largest).
SKEWED_VALUES = np.array([-0.5, -0.1, 0.0, 0.1, 0.3])
SKEWED_PROBS = np.array([0.1, 0.1, 0.6, 0.1, 0.1])


@pytest.mark.parametrize(("name", "n"), [("normal", 10), ("normal", 43), ("skewed", 100), ("skewed", 300),
                                         ("rare", 20), ("rare", 100)])
def test_size_at_the_margin_is_at_most_alpha(name: str, n: int) -> None:
    """H0 true at its boundary (mean difference = -margin): the test shows non-inferiority in at most α of the
    experiments (Monte Carlo error allowed). The skewed case is where a plain t-test is too eager (0.061 at 100); the
    rare case where calling all-tied questions non-inferior would be (0.36 at 20)."""
    rng = np.random.default_rng(n)
    margin = 0.02
    if name == "normal":
        d = rng.normal(-margin, 0.15, (SIMULATIONS, n))
    elif name == "rare":  # one question in 20 loses everything, the rest tie: most small samples see no loss
        margin = 0.05
        d = rng.choice([-1.0, 0.0], size=(SIMULATIONS, n), p=[0.05, 0.95])
    else:
        values = SKEWED_VALUES - SKEWED_VALUES @ SKEWED_PROBS - margin
        d = rng.choice(values, size=(SIMULATIONS, n), p=SKEWED_PROBS)
    size = float((noninferiority_p_values(d, margin) < ALPHA).mean())
    assert size <= ALPHA + MC_SLACK, size


def test_power_rises_with_the_questions() -> None:
    """A method truly as good (mean difference 0) is shown within the margin more often the more questions there are,
    and nearly always with enough of them."""
    rng = np.random.default_rng(1)
    values = SKEWED_VALUES - SKEWED_VALUES @ SKEWED_PROBS
    powers = [float((noninferiority_p_values(rng.choice(values, size=(4000, n), p=SKEWED_PROBS), 0.05)
                     < ALPHA).mean()) for n in (20, 50, 100, 200, 400)]
    assert powers == sorted(powers) and powers[0] < 0.5 < 0.95 < powers[-1], powers
