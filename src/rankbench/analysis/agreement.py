"""Agreement of the judge with human labels: weighted Cohen's kappa and confusion matrices, overall and per kind."""

from __future__ import annotations

import numpy as np
import pandas as pd

GRADES = 4  # the 0–3 scale
ALL = "all"


def confusion(human: np.ndarray, judge: np.ndarray, size: int = GRADES) -> np.ndarray:
    """Counts[h, j] of pairs graded h by people and j by the judge."""
    return np.bincount(np.asarray(human, dtype=np.int64) * size + np.asarray(judge, dtype=np.int64),
                       minlength=size * size).reshape(size, size)


def weighted_kappas(counts: np.ndarray, weights: str | None = "quadratic") -> np.ndarray:
    """Cohen's kappa of each confusion matrix in counts[..., size, size] (linear, quadratic or, with None,
    unweighted disagreement weights): 1 − Σ w·observed / Σ w·expected, NaN where expected disagreement is zero."""
    size = counts.shape[-1]
    distance = np.abs(np.subtract.outer(np.arange(size), np.arange(size))).astype(np.float64)
    w = {"linear": distance, "quadratic": distance ** 2, None: (distance > 0).astype(np.float64)}[weights]
    observed = counts / counts.sum(axis=(-2, -1), keepdims=True)
    expected = observed.sum(axis=-1)[..., :, None] * observed.sum(axis=-2)[..., None, :]
    denominator = (w * expected).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator == 0, np.nan, 1.0 - (w * observed).sum(axis=(-2, -1)) / denominator)


def weighted_kappa(counts: np.ndarray, weights: str | None = "quadratic") -> float:
    """Cohen's kappa of one confusion matrix; same definition as sklearn.metrics.cohen_kappa_score(labels=range(size)).

    NaN when expected disagreement is zero (both raters used a single grade).
    """
    return float(weighted_kappas(counts, weights))


def kappa_interval(human: np.ndarray, judge: np.ndarray, resamples: int = 2000, seed: int = 0,
                   weights: str | None = "quadratic") -> tuple[float, float]:
    """95% percentile bootstrap interval of the weighted kappa, resampling pairs:
    np.random.default_rng(seed).integers(0, n, (resamples, n)) draws the pairs of each resample.

    A handful of pairs gives a wide interval, which is the point: it shows how little a small sample says.
    Resamples where kappa is undefined (one grade only) are left out; NaNs when fewer than 2 pairs.
    """
    codes = np.asarray(human, dtype=np.int64) * GRADES + np.asarray(judge, dtype=np.int64)
    n = len(codes)
    if n < 2:
        return float("nan"), float("nan")
    drawn = codes[np.random.default_rng(seed).integers(0, n, (resamples, n))]
    offsets = np.arange(resamples, dtype=np.int64)[:, None] * GRADES * GRADES
    counts = np.bincount((drawn + offsets).ravel(), minlength=resamples * GRADES * GRADES)
    kappas = weighted_kappas(counts.reshape(resamples, GRADES, GRADES), weights)
    kappas = kappas[~np.isnan(kappas)]
    if len(kappas) == 0:
        return float("nan"), float("nan")
    low, high = np.percentile(kappas, [2.5, 97.5])
    return float(low), float(high)


def agreement(judged: pd.DataFrame, resamples: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per kind and `all`: n, exact agreement, unweighted/linear/quadratic kappa with the quadratic one's 95%
    bootstrap interval; and the confusion counts (long). Only pairs with both a human and a judged grade count.
    """
    both = judged[judged["human"].notna() & judged["judge"].notna()]
    groups = [(ALL, both)] + [(kind, group) for kind, group in both.groupby("kind", sort=True)]
    stats, cells = [], []
    for kind, group in groups:
        counts = confusion(group["human"].to_numpy(), group["judge"].to_numpy())
        n = int(counts.sum())
        stats.append({"kind": kind, "n": n,
                      "exact": float(np.trace(counts) / n) if n else float("nan"),
                      "kappa": weighted_kappa(counts, None) if n else float("nan"),
                      "kappa_linear": weighted_kappa(counts, "linear") if n else float("nan"),
                      "kappa_quadratic": weighted_kappa(counts, "quadratic") if n else float("nan")})
        stats[-1]["kappa_quadratic_low"], stats[-1]["kappa_quadratic_high"] = kappa_interval(
            group["human"].to_numpy(dtype=np.int64), group["judge"].to_numpy(dtype=np.int64), resamples, seed)
        human, judge = np.divmod(np.arange(GRADES * GRADES), GRADES)
        cells.append(pd.DataFrame({"kind": kind, "human": human, "judge": judge, "count": counts.reshape(-1)}))
    return pd.DataFrame(stats), pd.concat(cells, ignore_index=True)
