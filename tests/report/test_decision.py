"""The verdict and "What to do": each rule appears exactly when its pattern is measured (families from the registry,
not from names), with its evidence; a rule that does not apply is not shown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.analysis.decision import advice, verdict
from rankbench.configuration.defaults import DECISION_DEFAULTS
from rankbench.evaluation.scoring import summarize
from rankbench.report.decision import decision_lines

N = 80
RNG = np.random.default_rng(7)
BASE = RNG.uniform(0.3, 0.9, N)
NOISE = np.tile([0.03, -0.03, 0.08, -0.08], N // 4)
# Names that say nothing: the roles come from the types (registry families), never from the names.
TYPES = {"m1": "bm25", "m2": "dense", "m3": "rrf", "m4": "rerank"}
INPUTS = {"m3": ["m1", "m2"], "m4": ["m2"]}


def _tables(values: dict[str, np.ndarray], margin: float | None = 0.05) -> tuple[pd.DataFrame, pd.DataFrame]:
    long = pd.concat([pd.DataFrame({"method": m, "qid": [f"q{i}" for i in range(N)], "metric": "ndcg", "k": 10,
                                    "value": np.clip(v, 0, 1), "grain": "document", "kind": "all"})
                      for m, v in values.items()], ignore_index=True)
    summary, pairs = summarize(long, ["grain", "kind"], None, n_resamples=2000,
                               margins={("ndcg", 10): margin} if margin else None)
    return summary, pairs


def _rules(values: dict[str, np.ndarray], margin: float | None = 0.05, **settings) -> list[str]:
    summary, pairs = _tables(values, margin)
    return [a.rule for a in advice(summary, pairs, "document", "ndcg", 10, 0.05, TYPES, INPUTS,
                                   {**DECISION_DEFAULTS, **settings})]


def test_hybrid_clearly_above_dense_and_lexical_above_dense() -> None:
    rules = _rules({"m1": BASE - 0.05 + NOISE, "m2": BASE - 0.2 + NOISE, "m3": BASE + NOISE, "m4": BASE - 0.19})
    assert "hybrid_above_dense" in rules and "lexical_above_dense" in rules
    assert "dense_close_to_hybrid" not in rules and "reranker_gains" not in rules and "low_scores" not in rules


def test_dense_close_to_hybrid_needs_a_margin_and_the_reranker_rule_its_gain() -> None:
    values = {"m1": BASE - 0.3, "m2": BASE - 0.005 + NOISE, "m3": BASE, "m4": BASE + 0.1 + NOISE / 2}
    rules = _rules(values)
    assert "dense_close_to_hybrid" in rules and "hybrid_above_dense" not in rules
    assert "reranker_gains" in rules and "lexical_above_dense" not in rules
    assert _rules(values, margin=None)[0] == "needs_margin"  # not shown different is not "≈": the page says why
    assert "reranker_gains" not in _rules(values, rerank_gain=0.2)


def test_low_scores_and_wide_intervals() -> None:
    low = {m: BASE / 5 + NOISE / 10 for m in TYPES}
    assert "low_scores" in _rules(low)
    noisy = {"m1": BASE, "m2": BASE - 0.01 + 4 * NOISE, "m3": BASE - 0.3, "m4": BASE - 0.3}
    assert _rules(noisy) == ["wide_intervals"]
    assert "wide_intervals" not in _rules({**noisy, "m2": BASE - 0.01 + NOISE})  # the runner-up shown within δ
    summary, pairs = _tables(noisy)
    answer = verdict(summary, pairs, "document", "ndcg", 10, 0.05)
    assert answer.best == "m1" and answer.tied == ["m2"] and answer.needed > N


def test_the_page_sections_state_the_evidence_and_the_budget() -> None:
    summary, pairs = _tables({"m1": BASE - 0.3, "m2": BASE - 0.1, "m3": BASE - 0.09, "m4": BASE + NOISE / 2})
    lines = "\n".join(decision_lines(summary, pairs, "document", [("ndcg", 10)], 0.05, TYPES, INPUTS,
                                     {**DECISION_DEFAULTS, "latency_budget_ms": 50.0},
                                     cost={"m4": {"p50_ms": 30.0, "p95_ms": 80.0}}))
    assert lines.startswith("## The answer (nDCG@10, document grain, all questions)\n\n**m4** has the highest")
    assert "clearly ahead of every other method" in lines
    rerank = next(line for line in lines.splitlines() if "reranker gains a lot" in line)
    assert "m4 over its first stage m2, Δ +0.1" in rerank and "Holm p" in rerank and "W/T/L" in rerank
    assert "served, it takes 30.0 ms p50, 80.0 ms p95 a question — over `decision.latency_budget_ms` 50" in rerank
    assert "→ Not recommended at this budget" in rerank and "Turn it on" not in rerank


def test_the_budget_applies_to_every_method_and_names_the_best_within_it_with_its_loss() -> None:
    """m4 is best but over the 50 ms budget: it is never recommended, and the page names m3 (the best that fits)
    with Δ m3 − m4 and its CI as the pairs table holds them."""
    summary, pairs = _tables({"m1": BASE - 0.3, "m2": BASE - 0.1, "m3": BASE - 0.09, "m4": BASE + NOISE / 2})
    cost = {"m1": {"p50_ms": 1.0, "p95_ms": 2.0}, "m2": {"p50_ms": 8.0, "p95_ms": 12.0},
            "m3": {"p50_ms": 15.0, "p95_ms": 20.0}, "m4": {"p50_ms": 30.0, "p95_ms": 80.0}}
    lines = "\n".join(decision_lines(summary, pairs, "document", [("ndcg", 10)], 0.05, TYPES, INPUTS,
                                     {**DECISION_DEFAULTS, "latency_budget_ms": 50.0}, cost=cost))
    budget = next(line for line in lines.splitlines() if "**Latency budget**" in line)
    row = pairs[(pairs["grain"] == "document") & (pairs["kind"] == "all") & (pairs["method_a"].isin(["m3", "m4"]))
                & (pairs["method_b"].isin(["m3", "m4"]))].iloc[0]
    sign = 1 if row["method_a"] == "m3" else -1
    low, high = sorted([sign * row["diff_low"], sign * row["diff_high"]])
    assert "over it: m4 (80.0 ms)" in budget and "The best within it is **m3** (p95 20.0 ms)" in budget
    assert f"Δ {sign * row['diff']:+.3f} nDCG@10 (95% CI {low:+.3f} to {high:+.3f}" in budget
    within = {**cost, "m4": {"p50_ms": 30.0, "p95_ms": 40.0}}
    fits = "\n".join(decision_lines(summary, pairs, "document", [("ndcg", 10)], 0.05, TYPES, INPUTS,
                                    {**DECISION_DEFAULTS, "latency_budget_ms": 50.0}, cost=within))
    assert "The best method, m4, fits it." in fits and "every timed method fits" in fits
    # the comparison page passes no cost: no budget line, nothing timed
    plain = "\n".join(decision_lines(summary, pairs, "document", [("ndcg", 10)], 0.05, TYPES, INPUTS,
                                     {**DECISION_DEFAULTS, "latency_budget_ms": 50.0}))
    assert "Latency budget" not in plain and " ms p95" not in plain


def test_a_ci_that_excludes_0_beside_a_non_significant_holm_p_is_explained() -> None:
    """Before: "Δ +0.030 (95% CI +0.005 to +0.066), Holm p = 0.625, W/T/L 4/21/0", unexplained."""
    from rankbench.analysis.decision import Comparison
    from rankbench.report.decision import evidence

    c = Comparison("a", "b", 0.6, 0.57, 0.030, 0.005, 0.066, 0.625, 4, 21, 0, 25, p_raw=0.125,
                   family=("a vs b", "c vs b", "d vs b", "e vs b", "f vs b"))
    text = evidence(c)
    assert text.startswith("Δ +0.030 (95% CI +0.005 to +0.066), Holm p = 0.625, W/T/L 4/21/0 over 25 questions (")
    assert "Holm-corrected over 5 comparisons, so they need not agree" in text
    assert "with 4 changed questions the exact sign-flip test cannot go below p = 0.125" in text
    # The floor is the exact test's: 4 wins, no loss, over every sign pattern (scipy's exact permutation test).
    from scipy.stats import permutation_test

    d = np.array([0.2, 0.25, 0.3, 0.35])  # the 21 ties flip to themselves: they change no pattern's extremeness
    exact = permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
    assert exact == pytest.approx(0.125)
    agreeing = evidence(Comparison("a", "b", 0.6, 0.5, 0.1, 0.05, 0.15, 0.001, 30, 0, 0, 30, p_raw=0.0002))
    assert "need not agree" not in agreeing


@pytest.mark.parametrize("p_raw", [0.049, 0.012, 0.0031])
def test_the_family_and_how_it_would_change_are_said_and_true(p_raw: float) -> None:
    """Before: advice resting on a family of one at p = 0.049 disappeared when 13 methods were added, without a
    word. The clause names the family and the largest family in which the p surely stays below alpha: checked
    against statsmodels' Holm with the other comparisons' p at their least favourable (all larger)."""
    from statsmodels.stats.multitest import multipletests

    from rankbench.analysis.decision import Comparison
    from rankbench.report.decision import evidence

    text = evidence(Comparison("bm25", "dense", 0.6, 0.5, 0.1, 0.01, 0.2, p_raw, 30, 10, 20, 60, p_raw=p_raw,
                               family=("bm25 vs dense",)))
    largest = int(text.split("in any family of up to ")[1].split(" comparison")[0].replace(",", ""))
    assert "Holm over 1 comparison (bm25 vs dense)" in text
    rng = np.random.default_rng(0)
    for size in sorted({1, max(1, largest // 2), largest}):  # whatever the others' p, it stays below alpha
        for _ in range(5):
            others = rng.uniform(0, 1, size - 1)
            assert multipletests([p_raw, *others], method="holm")[1][0] < 0.05
    worst = multipletests([p_raw] + [1.0] * largest, method="holm")[1][0]  # one comparison more: can lapse
    assert worst >= 0.05


def test_the_rules_name_their_family() -> None:
    summary, pairs = _tables({"m1": BASE - 0.05 + NOISE, "m2": BASE - 0.2 + NOISE, "m3": BASE + NOISE,
                              "m4": BASE - 0.19})
    lines = "\n".join(decision_lines(summary, pairs, "document", [("ndcg", 10)], 0.05, TYPES, INPUTS,
                                     DECISION_DEFAULTS))
    lexical = next(line for line in lines.splitlines() if "Lexical clearly above dense" in line)
    assert "Holm over 3 comparisons (m3 vs m2, m1 vs m2, m4 vs m2)" in lexical


@pytest.mark.parametrize(("runner_up", "head"), [(BASE, "Tied on every question"),
                                                 (BASE - 0.0005 + NOISE, "Wide intervals")])
def test_a_pair_more_questions_would_not_settle_is_not_told_to_add_questions(runner_up: np.ndarray,
                                                                             head: str) -> None:
    """Before: two methods equal on every question (no margin set) read "Wide intervals … Δ +0.000 (95% CI +0.000 to
    +0.000) …; more questions would not settle it. → Not enough questions …: add questions"; a lead needing more than
    100 times the questions said "treat them as tied" and then "add questions" too."""
    summary, pairs = _tables({"m1": BASE, "m2": runner_up, "m3": BASE - 0.3, "m4": BASE - 0.3}, margin=None)
    lines = "\n".join(decision_lines(summary, pairs, "document", [("ndcg", 10)], 0.05, TYPES, INPUTS,
                                     DECISION_DEFAULTS))
    rule = next(line for line in lines.splitlines() if line.startswith(f"- **{head}**"))
    assert "would not settle it" in rule or "treat them as tied" in rule
    assert "add questions" not in rule and "→ Treat them as tied: choose on cost" in rule


def test_a_reranker_grid_s_points_are_one_bullet_and_other_rules_stay_apart() -> None:
    """Two depths of one rerank grid over the same first stage: one bullet with both gains and where to choose
    (the Recommended configuration); another reranker, or another first stage, keeps its own."""
    from rankbench.analysis.decision import Advice, Comparison
    from rankbench.report.decision import _group_line, grid_groups

    def gain(method: str, first: str, diff: float) -> Advice:
        c = Comparison(method, first, 0.7, 0.6, diff, diff - 0.05, diff + 0.05, 0.01, 20, 25, 5, 50)
        return Advice("reranker_gains", [c], {"rerank_gain": 0.05, "latency_budget_ms": np.nan}, [method, first])

    rules = [gain("ce[depth=20]", "bm25", 0.107), Advice("low_scores", [], {"best": 0.1, "low_score": 0.2}, ["x"]),
             gain("ce[depth=30]", "bm25", 0.111), gain("ce[depth=20]-dense", "dense", 0.08),
             gain("other[depth=20]", "bm25", 0.09)]
    groups = grid_groups(rules)
    assert [[item.methods[0] for item in group] for group in groups] == [
        ["ce[depth=20]", "ce[depth=30]"], ["x"], ["ce[depth=20]-dense"], ["other[depth=20]"]]
    line = _group_line(groups[0], "nDCG@10", None, "", None)
    assert line.startswith("**The reranker gains a lot**: ce\\[depth=20\\] over its first stage bm25, Δ +0.107")
    assert ". The grid's other points gain too: ce\\[depth=30\\] Δ +0.111 (95% CI +0.061 to +0.161), " in line
    assert line.count("→") == 1 and line.endswith("Which point to keep: the *Recommended configuration* above (the "
                                                  "cheapest shown no worse than the best).")
    assert ".." not in line


def test_a_grid_s_abstention_zones_are_one_bullet() -> None:
    from rankbench.report.decision import abstention_rules

    def zones(method: str, caught: int, lost: int) -> pd.DataFrame:
        return pd.DataFrame({"method": method, "zone": ["abstain", "caution", "answer"], "high": [0.87, 0.89, 1.0],
                             "unanswerable": [caught, 1, 8 - caught - 1], "answerable": [lost, 5, 45 - lost],
                             "unanswerable_share": [caught / 8, 1 / 8, (7 - caught) / 8],
                             "answerable_share": [lost / 50, 0.1, (45 - lost) / 50]})

    lines = abstention_rules(pd.concat([zones("ce[depth=20]", 3, 9), zones("ce[depth=30]", 2, 9),
                                        zones("plain", 4, 2)]))
    assert len(lines) == 2
    grid, plain = lines
    assert grid.startswith("- **Abstention (ce\\[depth=20\\])**: abstaining below t1 = 0.87 catches 38% of the "
                           "unanswerable questions (3 of 8;")
    assert ". The grid's other points: ce\\[depth=30\\] below t1 = 0.87 catches 25% of the unanswerable questions " \
           "(2 of 8;" in grid and grid.count("→") == 1
    assert plain.startswith("- **Abstention (plain)**") and "grid's other points" not in plain
