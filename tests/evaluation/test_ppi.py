"""Judge-corrected metrics (PPI++): coverage and width checked by simulation against a known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation.ppi import human_only, judge_corrected, judge_only, ppi_mean

SEEDS = 2000


def simulate(seed: int, noise: float, n: int = 60, big_n: int = 600):
    """Per-query nDCG-like truth in [0, 1] on n + N questions; the judge's value is the truth shifted up by 0.1
    (a lenient judge) plus noise. Returns the true mean and the three estimates."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 1.5, n + big_n)
    judge = np.clip(truth + 0.1 + rng.normal(0, noise, n + big_n), 0, 1)
    return (2 / 3.5, ppi_mean(truth[:n], judge[:n], judge[n:]), human_only(truth[:n]), judge_only(judge))


@pytest.mark.parametrize("noise", [0.05, 0.5])
def test_ppi_ci_covers_the_truth_95_percent_of_the_time(noise):
    """Over many seeds the 95% CI holds the true mean 0.95 ± 0.02 of the time, informative judge or not; the
    judge-only CI, biased by the lenient judge, does not."""
    runs = [simulate(seed, noise) for seed in range(SEEDS)]
    covered = np.mean([low <= mean <= high for mean, (_, low, high, _), _, _ in runs])
    assert abs(covered - 0.95) <= 0.02
    judge_covered = np.mean([low <= mean <= high for mean, _, _, (_, low, high) in runs])
    assert judge_covered < 0.5


def test_ppi_is_narrower_than_human_only_when_the_judge_is_informative():
    informative = [simulate(seed, 0.05) for seed in range(200)]
    ppi_width = np.mean([high - low for _, (_, low, high, _), _, _ in informative])
    human_width = np.mean([high - low for _, _, (_, low, high), _ in informative])
    assert ppi_width < 0.6 * human_width
    # an uninformative judge (pure noise) gets λ near 0: no wider than the human-only CI, within noise
    rng = np.random.default_rng(0)
    truth, judge = rng.beta(2, 1.5, 660), rng.random(660)
    _, low, high, weight = ppi_mean(truth[:60], judge[:60], judge[60:])
    _, h_low, h_high = human_only(truth[:60])
    assert abs(weight) < 0.3 and high - low < 1.05 * (h_high - h_low)


def test_ppi_rejects_too_few_questions_and_reduces_to_human_only_without_unlabelled_ones():
    with pytest.raises(ValueError, match="at least 2 labelled"):
        ppi_mean(np.array([1.0]), np.array([1.0]), np.array([0.5, 0.2]))
    human, judge = np.array([0.2, 0.9, 0.5, 0.7]), np.array([0.9, 0.9, 0.8, 1.0])
    assert ppi_mean(human, judge, np.array([])) == (*human_only(human), 0.0)


def test_judge_corrected_table_on_a_constructed_case():
    """Four questions people graded fully, two they did not: the human estimate uses the four, the judge's every
    question, PPI both; a method with fewer than 2 fully labelled questions is left out."""
    index = pd.Index(["q1", "q2", "q3", "q4", "q5", "q6"], name="qid")
    human = pd.DataFrame({"a": [1.0, 0.0, 1.0, 0.5, 0.0, 0.0], "b": [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]}, index=index)
    judge = pd.DataFrame({"a": [1.0, 0.5, 1.0, 0.5, 1.0, 0.5], "b": [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]}, index=index)
    table = judge_corrected(human, judge, {"a": pd.Index(["q1", "q2", "q3", "q4"]), "b": pd.Index(["q1"])})
    assert table["method"].unique().tolist() == ["a"] and table["estimator"].tolist() == ["human", "judge", "ppi"]
    rows = table.set_index("estimator")
    assert rows.loc["human", "estimate"] == pytest.approx(0.625)
    assert rows.loc["judge", "estimate"] == pytest.approx(0.75)
    expected = ppi_mean(human["a"].to_numpy()[:4], judge["a"].to_numpy()[:4], judge["a"].to_numpy()[4:])
    assert tuple(rows.loc["ppi", ["estimate", "ci_low", "ci_high", "weight"]]) == pytest.approx(expected)
    assert (rows["n_labelled"] == 4).all() and (rows["n_unlabelled"] == 2).all()
