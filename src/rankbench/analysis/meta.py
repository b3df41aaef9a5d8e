"""Pooling a method's difference from the baseline over datasets: each dataset's paired mean difference with its
variance, a DerSimonian–Laird random-effects meta-analysis (tau², I², pooled difference with its CI), and the
sign and Wilcoxon signed-rank tests over datasets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class PairedEffect:
    """One dataset: mean of the per-question differences (method − baseline), the variance of that mean, n."""

    diff: float
    variance: float
    n: int


def paired_effect(method: np.ndarray, baseline: np.ndarray) -> PairedEffect:
    """Mean paired difference over the same questions and its sampling variance, var(d) (ddof 1) / n."""
    differences = np.asarray(method, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    if differences.ndim != 1 or len(differences) < 2 or not np.isfinite(differences).all():
        raise ValueError("paired_effect needs at least two finite paired values")
    return PairedEffect(float(differences.mean()), float(differences.var(ddof=1) / len(differences)),
                        len(differences))


@dataclass(frozen=True)
class Pooled:
    """A random-effects (DerSimonian–Laird) pooled difference over k datasets with its heterogeneity."""

    k: int
    diff: float
    se: float
    ci_low: float
    ci_high: float
    p: float
    tau2: float
    i2: float
    q: float
    p_q: float
    weights: tuple[float, ...]

    def as_dict(self) -> dict:
        return asdict(self)


def random_effects(diffs: Sequence[float], variances: Sequence[float], confidence: float = 0.95) -> Pooled:
    """DerSimonian–Laird: tau² = max(0, (Q − (k−1)) / (Σw − Σw²/Σw)) with w = 1/v; the pooled difference weights
    each dataset by 1/(v + tau²); z-based CI and p; I² = max(0, (Q − (k−1)) / Q); weights relative (sum 1).

    Needs two datasets or more, each with a positive variance (a dataset where the method equals the baseline on
    every question carries no sampling error, and the weights are undefined)."""
    y, v = np.asarray(diffs, dtype=np.float64), np.asarray(variances, dtype=np.float64)
    if y.shape != v.shape or y.ndim != 1 or len(y) < 2:
        raise ValueError("random_effects needs one variance per difference and at least two datasets")
    if not (np.isfinite(y).all() and np.isfinite(v).all() and (v > 0).all()):
        raise ValueError("random_effects needs finite differences and positive variances")
    w = 1.0 / v
    fixed = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - fixed) ** 2))
    df = len(y) - 1
    tau2 = max(0.0, (q - df) / (np.sum(w) - np.sum(w**2) / np.sum(w)))
    w_re = 1.0 / (v + tau2)
    pooled = float(np.sum(w_re * y) / np.sum(w_re))
    se = float(np.sqrt(1.0 / np.sum(w_re)))
    z = stats.norm.ppf(0.5 + confidence / 2)
    return Pooled(k=len(y), diff=pooled, se=se, ci_low=pooled - z * se, ci_high=pooled + z * se,
                  p=float(2 * stats.norm.sf(abs(pooled) / se)), tau2=float(tau2),
                  i2=max(0.0, (q - df) / q) if q > 0 else 0.0, q=q, p_q=float(stats.chi2.sf(q, df)),
                  weights=tuple(float(x) for x in w_re / np.sum(w_re)))


def sign_test(diffs: Sequence[float]) -> tuple[int, int, float]:
    """Datasets where the method is better and worse than the baseline, and the two-sided exact binomial p
    (ties dropped; 1.0 when every dataset ties)."""
    y = np.asarray(diffs, dtype=np.float64)
    better, worse = int((y > 0).sum()), int((y < 0).sum())
    if better + worse == 0:
        return better, worse, 1.0
    return better, worse, float(stats.binomtest(better, better + worse, 0.5).pvalue)


def wilcoxon_p(diffs: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p of the per-dataset differences (exact for few datasets; zeros dropped;
    1.0 when every difference is zero)."""
    y = np.asarray(diffs, dtype=np.float64)
    if not (y != 0).any():
        return 1.0
    return float(stats.wilcoxon(y, zero_method="wilcox", alternative="two-sided").pvalue)
