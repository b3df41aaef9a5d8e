"""The pooled statistics of a study (rankbench.analysis.meta) against statsmodels' combine_effects and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.meta_analysis import combine_effects

from rankbench.analysis.meta import paired_effect, random_effects, sign_test, wilcoxon_p


def _reference(diffs: np.ndarray, variances: np.ndarray):
    result = combine_effects(diffs, variances, method_re="dl")
    frame = result.summary_frame()
    return result, frame


@pytest.mark.parametrize("seed", range(8))
def test_random_effects_equals_statsmodels_dersimonian_laird_when_datasets_disagree(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 9))
    diffs = rng.normal(0.02, 0.08, k)  # spread far beyond the sampling error: tau² > 0
    variances = rng.uniform(1e-4, 1e-3, k)
    result, frame = _reference(diffs, variances)
    assert result.tau2 > 0
    pooled = random_effects(diffs, variances)
    assert pooled.diff == pytest.approx(frame.loc["random effect", "eff"], rel=1e-12)
    assert pooled.se == pytest.approx(frame.loc["random effect", "sd_eff"], rel=1e-12)
    assert pooled.ci_low == pytest.approx(frame.loc["random effect", "ci_low"], rel=1e-9)
    assert pooled.ci_high == pytest.approx(frame.loc["random effect", "ci_upp"], rel=1e-9)
    assert pooled.tau2 == pytest.approx(result.tau2, rel=1e-12)
    assert pooled.i2 == pytest.approx(result.i2, rel=1e-12)
    assert pooled.q == pytest.approx(result.q, rel=1e-12)
    assert pooled.p_q == pytest.approx(result.test_homogeneity().pvalue, rel=1e-9)
    assert pooled.weights == pytest.approx(tuple(frame["w_re"].iloc[:k]), rel=1e-12)


def test_homogeneous_datasets_pool_as_the_fixed_effect_with_tau2_and_i2_truncated_at_zero() -> None:
    # statsmodels' one-step DL leaves tau² negative when Q < k - 1; DerSimonian and Laird truncate it at 0,
    # which makes the random-effects estimate the fixed-effect one.
    diffs, variances = np.array([0.030, 0.031, 0.029]), np.array([4e-4, 5e-4, 6e-4])
    result, frame = _reference(diffs, variances)
    assert result.tau2 < 0
    pooled = random_effects(diffs, variances)
    assert (pooled.tau2, pooled.i2) == (0.0, 0.0)
    assert pooled.diff == pytest.approx(frame.loc["fixed effect", "eff"], rel=1e-12)
    assert pooled.se == pytest.approx(frame.loc["fixed effect", "sd_eff"], rel=1e-12)


def test_random_effects_refuses_what_it_cannot_weigh() -> None:
    with pytest.raises(ValueError, match="two datasets"):
        random_effects([0.1], [0.01])
    with pytest.raises(ValueError, match="positive variances"):
        random_effects([0.1, 0.0], [0.01, 0.0])


def test_paired_effect_is_the_mean_difference_and_the_variance_of_that_mean() -> None:
    a, b = np.array([1.0, 0.5, 0.0, 1.0]), np.array([0.5, 0.5, 0.5, 0.0])
    effect = paired_effect(a, b)
    d = a - b
    assert effect.diff == pytest.approx(d.mean())
    assert effect.variance == pytest.approx(np.var(d, ddof=1) / 4)
    assert effect.n == 4


def test_sign_and_wilcoxon_tests_over_datasets() -> None:
    assert sign_test([0.1, 0.2, 0.3]) == (3, 0, pytest.approx(0.25))
    assert sign_test([0.1, -0.2, 0.0]) == (1, 1, pytest.approx(1.0))
    assert sign_test([0.0, 0.0]) == (0, 0, 1.0)
    assert wilcoxon_p([0.1, 0.2, 0.3]) == pytest.approx(0.25)  # exact: 2 of the 8 sign patterns are as extreme
    assert wilcoxon_p([0.0, 0.0]) == 1.0
