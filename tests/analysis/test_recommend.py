"""The recommendation rule (analysis/recommend.py) checked by simulation: equal configurations are not called "better"
more often than alpha, a real gap of 2δ is found at the demo's question count, and abstention thresholds' held-out
rates cover the rates on new questions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr

from rankbench.analysis.recommend import Option, abstention_thresholds, choose, share_bounds, smallest_margin
from rankbench.evaluation.stats import noninferiority_p_values

ALPHA, MARGIN = 0.05, 0.05
DEMO_QUESTIONS = 50  # demo v3's evaluated questions
DEMO_SD = 0.235  # median sd of demo v3's per-question nDCG@10 differences between methods (pairs.parquet)
CHEAP, COSTLY = Option("cheap", "a", (1.0,)), Option("costly", "b", (2.0,))


def _draws(gap: float, draws: int, seed: int) -> list[tuple[str | None, str]]:
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(draws):
        a = rng.uniform(0, 1, DEMO_QUESTIONS)
        b = a + rng.normal(gap, DEMO_SD, DEMO_QUESTIONS)
        decision = choose("axis", "ndcg@10", [COSTLY, CHEAP], np.vstack([b, a]), MARGIN, ALPHA, resamples=50)
        found.append((decision.chosen, decision.how))
    return found


def test_two_equal_configurations_are_not_called_better_more_often_than_alpha() -> None:
    found = _draws(0.0, 1000, 1)
    better = sum(1 for chosen, how in found if chosen == "costly" and how == "better") / len(found)
    cheap = sum(1 for chosen, _ in found if chosen == "cheap") / len(found)
    assert better <= ALPHA
    assert cheap > 0.3  # equal in truth, the cheaper one is shown no worse by δ in about half the draws (power)


def test_a_real_gap_of_two_margins_is_chosen_at_the_demo_question_count() -> None:
    found = _draws(2 * MARGIN, 1000, 2)
    costly = sum(1 for chosen, _ in found if chosen == "costly") / len(found)
    cheap = sum(1 for chosen, _ in found if chosen == "cheap") / len(found)
    undecided = sum(1 for chosen, how in found if chosen is None and how == "undecided") / len(found)
    assert costly >= 0.8
    assert cheap <= ALPHA  # the worse one is (almost) never passed off as no worse
    assert costly + cheap + undecided == pytest.approx(1.0)


def test_the_cheapest_option_shown_no_worse_wins_and_grid_siblings_are_one_decision() -> None:
    rng = np.random.default_rng(3)
    best = rng.uniform(0, 1, 200)
    options = [Option(f"depth {d}", f"m{d}", (float(d),)) for d in (10, 20, 30)]
    values = np.vstack([best - 0.3, best - 0.001 + rng.normal(0, 0.01, 200), best])
    decision = choose("rerank depth", "ndcg@10", options, values, 0.02, ALPHA)
    assert (decision.best, decision.chosen, decision.how) == ("depth 30", "depth 20", "noninferior")
    assert len(decision.tests) == 1 and decision.tests[0].family == 2  # Holm over the two cheaper depths


def test_identical_options_choose_the_cheaper_one() -> None:
    values = np.tile(np.linspace(0, 1, 30), (2, 1))
    decision = choose("k", "recall@k", [CHEAP, COSTLY], values, MARGIN, ALPHA)
    assert (decision.chosen, decision.how) == ("cheap", "identical")


def test_an_undecided_axis_says_the_smallest_margin_and_the_questions_that_would_decide_it() -> None:
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 1, 20)
    noise = rng.normal(0.0, 0.3, 20)
    b = a + 0.02 + noise - noise.mean()  # the costly one 0.02 above on these questions, far from shown
    decision = choose("axis", "ndcg@10", [CHEAP, COSTLY], np.vstack([a, b]), 0.01, ALPHA)
    assert decision.chosen is None and decision.how == "undecided"
    assert decision.kept.label == "costly"  # the file keeps the best-scoring option until decided
    d = a - b
    assert noninferiority_p_values(d[None, :], decision.smallest_margin)[0] == pytest.approx(ALPHA, abs=1e-3)
    assert decision.smallest_margin > 0.01 and 20 < decision.needed < 1e6
    assert smallest_margin(np.zeros(5), ALPHA) != smallest_margin(np.zeros(5), ALPHA)  # NaN: all tied


def test_held_out_abstention_rates_cover_the_rates_on_new_questions() -> None:
    rng = np.random.default_rng(5)
    covered = {"lost": 0, "caught": 0}
    draws = 200
    for _ in range(draws):
        yes, no = rng.normal(1.0, 1.0, 100), rng.normal(-0.5, 1.0, 40)
        scores = pd.DataFrame({"qid": [f"q{i:03d}" for i in range(140)], "answerable": [True] * 100 + [False] * 40,
                               "score": np.concatenate([yes, no])})
        found = abstention_thresholds("m", scores, caught=0.5, lost=0.1)
        assert found is not None
        true_lost, true_caught = float(ndtr(found.t1 - 1.0)), float(ndtr(found.t2 + 0.5))
        low, high = share_bounds(*found.lost)
        covered["lost"] += low <= true_lost <= high
        low, high = share_bounds(*found.caught_t2)
        covered["caught"] += low <= true_caught <= high
    assert covered["lost"] / draws >= 0.9 and covered["caught"] / draws >= 0.9, covered


def test_abstention_without_unanswerable_questions_proposes_nothing() -> None:
    scores = pd.DataFrame({"qid": ["a", "b"], "answerable": [True, True], "score": [0.1, 0.2]})
    assert abstention_thresholds("m", scores, 0.5, 0.1) is None
