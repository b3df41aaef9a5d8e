"""Judge-corrected metrics: prediction-powered inference (PPI++, Angelopoulos et al. 2023) of a mean metric from
per-query values on LLM labels everywhere, corrected by the questions that also have human labels."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _interval(estimate: float, variance: float, confidence: float) -> tuple[float, float, float]:
    from scipy import stats as _sps  # here, not at the top: the report jobs that only print pages skip scipy

    half = float(_sps.norm.ppf(0.5 + confidence / 2)) * np.sqrt(max(variance, 0.0))
    return estimate, estimate - half, estimate + half


def human_only(human: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of the per-query values on human labels with its normal CI (the classical estimate)."""
    return _interval(float(human.mean()), float(human.var(ddof=1)) / len(human), confidence)


def judge_only(judge_all: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of the per-query values on LLM labels over every question with its normal CI (biased by the judge)."""
    return _interval(float(judge_all.mean()), float(judge_all.var(ddof=1)) / len(judge_all), confidence)


def ppi_mean(human: np.ndarray, judge_labelled: np.ndarray, judge_unlabelled: np.ndarray,
             confidence: float = 0.95) -> tuple[float, float, float, float]:
    """PPI++ estimate of the mean, CI and tuning weight λ.

    human and judge_labelled: per-query values on human and on LLM labels for the n questions people labelled;
    judge_unlabelled: values on LLM labels for the N other questions (fewer than 2: the human-only estimate, λ = 0).
    λ = cov(human, judge) / ((1 + n/N) var(judge)) minimises the variance (λ = 0 is the human-only estimate,
    λ = 1 plain PPI); the CI is normal.
    """
    n, big_n = len(human), len(judge_unlabelled)
    if n < 2:
        raise ValueError(f"PPI needs at least 2 labelled questions, got {n}")
    if big_n < 2:  # nothing (or too little to estimate a variance) for the judge to add: the human-only estimate
        return (*human_only(human, confidence), 0.0)
    pooled = np.concatenate([judge_labelled, judge_unlabelled])
    spread = float(pooled.var(ddof=1))
    covariance = float(np.cov(human, judge_labelled, ddof=1)[0, 1])
    weight = covariance / ((1 + n / big_n) * spread) if spread > 0 else 0.0
    residual = human - weight * judge_labelled
    estimate = weight * float(judge_unlabelled.mean()) + float(residual.mean())
    variance = weight ** 2 * float(judge_unlabelled.var(ddof=1)) / big_n + float(residual.var(ddof=1)) / n
    return (*_interval(estimate, variance, confidence), weight)


def judge_corrected(human: pd.DataFrame, judge: pd.DataFrame, labelled: dict[str, pd.Index],
                    confidence: float = 0.95) -> pd.DataFrame:
    """Per method: human-only, judge-only and PPI++ estimates of one metric with their CIs (method, estimator,
    estimate, ci_low, ci_high, weight, n_labelled, n_unlabelled). Estimators: human (people's labels, the fully
    labelled questions), judge (LLM labels on the pool, every question) and ppi (the judge's values corrected by
    the fully labelled questions).

    human and judge: per-query values (question x method) on people's and on the judge's labels, over the same
    questions; labelled[method]: the questions whose pooled items people all graded (their human values are exact).
    """
    rows = []
    for method in human.columns:
        inside = human.index.isin(labelled[method])
        y, fitted = human.loc[inside, method].to_numpy(), judge.loc[inside, method].to_numpy()
        rest = judge.loc[~inside, method].to_numpy()
        counts = {"n_labelled": len(y), "n_unlabelled": len(rest)}
        if len(y) < 2:
            continue
        estimates = {"human": (*human_only(y, confidence), np.nan),
                     "judge": (*judge_only(judge[method].to_numpy(), confidence), np.nan),
                     "ppi": ppi_mean(y, fitted, rest, confidence)}
        rows += [{"method": method, "estimator": name, "estimate": value[0], "ci_low": value[1],
                  "ci_high": value[2], "weight": value[3], **counts} for name, value in estimates.items()]
    return pd.DataFrame(rows, columns=["method", "estimator", "estimate", "ci_low", "ci_high", "weight",
                                       "n_labelled", "n_unlabelled"])
