"""Question-budget planner: validated by simulation against known distributions of per-query differences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.analysis.budget import (
    _quantiles,
    minimum_detectable_difference,
    normal_n,
    plan_budget,
    plan_pair,
)
from rankbench.evaluation.stats import t_test_p_values
from rankbench.report.budget import (
    budget_page,
    headline_findings,
)
from rankbench.report.budget import (
    finding as budget_finding,  # one sentence of the page
)

ALPHA = 0.05 / 11  # Holm's first step over a baseline family of 11 methods


def empirical_power(draw, n: int, alpha: float, rng: np.random.Generator, experiments: int = 4000) -> float:
    """Share of fresh experiments of n questions from the true distribution in which the paired t-test rejects."""
    return float((t_test_p_values(draw(rng, (experiments, n))) < alpha).mean())


def hit_differences(rng: np.random.Generator, size) -> np.ndarray:
    """hit@1 differences: +1, 0 or -1 per question (far from normal)."""
    return rng.choice([1.0, 0.0, -1.0], p=[0.30, 0.55, 0.15], size=size)


def skewed_differences(rng: np.random.Generator, size) -> np.ndarray:
    """nDCG-like differences: 70% ties, otherwise a skewed gain or a small loss."""
    tie = rng.random(size) < 0.7
    return np.where(tie, 0.0, np.where(rng.random(size) < 0.75, rng.beta(2, 5, size), -rng.beta(1, 8, size)))


@pytest.mark.parametrize("draw", [hit_differences, skewed_differences])
def test_planned_n_reaches_the_power_on_fresh_questions(draw):
    """Planning from a large sample of a known distribution, fresh experiments at the planned n have power 0.8."""
    sample = draw(np.random.default_rng(1), 20_000)
    plan = plan_pair(sample, ALPHA, seed=2)
    assert plan["simulated"]
    n = int(plan["n_needed"])
    assert 10 < n < 2000
    assert abs(empirical_power(draw, n, ALPHA, np.random.default_rng(3)) - 0.8) <= 0.05
    # and a quarter fewer questions is clearly short of it: the planned n is not merely large enough
    assert empirical_power(draw, int(n * 0.75), ALPHA, np.random.default_rng(4)) < 0.75


def test_formula_matches_simulation_for_normal_differences():
    """For normal differences the t-test formula and the simulation agree, and the mdd at that n is the effect."""
    draw = lambda rng, size: rng.normal(0.05, 0.2, size)  # noqa: E731
    plan = plan_pair(draw(np.random.default_rng(5), 20_000), 0.05, seed=6)
    assert abs(plan["n_needed"] - plan["n_needed_normal"]) <= 0.1 * plan["n_needed_normal"]
    n = int(plan["n_needed_normal"])
    # n is the smallest count whose minimum detectable difference reaches the observed one
    assert minimum_detectable_difference(plan["sd"], n, 0.05) <= plan["diff"]
    assert minimum_detectable_difference(plan["sd"], n - 1, 0.05) > plan["diff"]
    assert abs(empirical_power(draw, n, 0.05, np.random.default_rng(7)) - 0.8) <= 0.05


def test_no_difference_needs_no_plan_and_constant_gain_needs_two():
    tie = plan_pair(np.array([0.5, -0.5, 0.0, 0.0]), 0.05, seed=0)
    assert np.isnan(tie["n_needed"]) and not tie["simulated"]
    constant = plan_pair(np.full(5, 0.2), 0.05, seed=0)
    assert constant["n_needed"] == 2


def toy_metrics(seed: int) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Per-query hit@1 of three methods over 30 questions of two kinds, and their aggregate means."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i:02d}" for i in range(30)]
    kinds = ["a" if i % 2 else "b" for i in range(30)]
    per_query, rows = {}, []
    for method, p in (("base", 0.4), ("good", 0.6), ("best", 0.7)):
        values = (rng.random(30) < p).astype(float)
        per_query[method] = pd.DataFrame({"qid": qids, "kind": kinds, "grain": "document", "metric": "hit", "k": 1,
                                          "value": values})
        for kind in ("all", "a", "b"):
            chosen = values if kind == "all" else values[np.array(kinds) == kind]
            rows.append({"method": method, "grain": "document", "kind": kind, "metric": "hit", "k": 1,
                         "mean": chosen.mean()})
    return per_query, pd.DataFrame(rows)


def test_plan_budget_pairs_families_and_determinism():
    per_query, aggregate = toy_metrics(0)
    table = plan_budget(per_query, aggregate, "document", [("hit", 1)], "base", 0.05, seed=0)
    again = plan_budget(per_query, aggregate, "document", [("hit", 1)], "base", 0.05, seed=0)
    pd.testing.assert_frame_equal(table, again)
    assert table["kind"].drop_duplicates().tolist() == ["all", "a", "b"]
    overall = table[table["kind"] == "all"]
    best = overall[overall["pair"] == "best vs runner-up"].iloc[0]
    means = aggregate[aggregate["kind"] == "all"].set_index("method")["mean"]
    assert best["method_a"] == means.idxmax()
    # the pairs with the best (as the tiers and the findings), not all 3 pairs
    assert best["family_size"] == 2 and best["alpha"] == pytest.approx(0.05 / 2)
    baseline = overall[overall["pair"] == "vs baseline"]
    assert sorted(baseline["method_a"]) == ["best", "good"] and set(baseline["method_b"]) == {"base"}
    assert (baseline["family_size"] == 2).all()
    assert (table.loc[table["kind"] != "all", "n"] == 15).all()


def test_without_baseline_or_second_method():
    """No baseline: only best vs runner-up; one method: an empty table, a page and no sentence for the findings."""
    per_query, aggregate = toy_metrics(1)
    table = plan_budget(per_query, aggregate, "document", [("hit", 1)], None, 0.05, seed=0)
    assert set(table["pair"]) == {"best vs runner-up"} and len(table) == 3
    alone = plan_budget({"base": per_query["base"]}, aggregate[aggregate["method"] == "base"], "document",
                        [("hit", 1)], "base", 0.05, seed=0)
    assert alone.empty and headline_findings(alone) == []
    assert budget_page(alone, "toy", "v1", 0.05).startswith("# toy")


def test_one_kind_gives_no_per_kind_rows_and_a_near_zero_lead_reads_as_a_practical_tie():
    """A BEIR set (one kind) would repeat every 'all' row under its kind; a lead of 0.0004 needs millions of
    questions, which the page calls a practical tie instead of a plan."""
    per_query, aggregate = toy_metrics(2)
    per_query = {m: f.assign(kind="beir") for m, f in per_query.items()}
    aggregate = aggregate[aggregate["kind"] == "all"]
    table = plan_budget(per_query, pd.concat([aggregate, aggregate.assign(kind="beir")]), "document", [("hit", 1)],
                        "base", 0.05, seed=0)
    assert set(table["kind"]) == {"all"}
    row = table.iloc[0].copy()
    row[["diff", "n_needed", "n", "simulated"]] = [0.0004, 2_067_725.0, 52, False]
    sentence = budget_finding(row)
    assert "practically tied" in sentence and "2,067,725" in sentence and "100 times the 52" in sentence
    row[["diff", "n_needed"]] = [0.05, 2_918.0]
    assert "need about 2,918 questions (more than 2,000: the normal formula's estimate)" in budget_finding(row)


def many_methods(n_methods: int = 12, n_questions: int = 48) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Per-query hit@1 and R@10 of many methods (several tied at the top) over questions of four kinds."""
    rng = np.random.default_rng(3)
    qids = [f"q{i:02d}" for i in range(n_questions)]
    kinds = np.array([("code", "para", "policy", "version")[i % 4] for i in range(n_questions)])
    per_query, rows = {}, []
    for index in range(n_methods):
        method = f"m{index:02d}" if index else "base"
        frames = []
        for metric, k in (("hit", 1), ("recall", 10)):
            values = (rng.random(n_questions) < 0.3 + 0.05 * min(index, 8)).astype(float)
            frames.append(pd.DataFrame({"qid": qids, "kind": kinds, "grain": "chunk", "metric": metric, "k": k,
                                        "value": values}))
            for kind in ("all", "code", "para", "policy", "version"):
                chosen = values if kind == "all" else values[kinds == kind]
                rows.append({"method": method, "grain": "chunk", "kind": kind, "metric": metric, "k": k,
                             "mean": chosen.mean()})
        per_query[method] = pd.concat(frames, ignore_index=True)
    return per_query, pd.DataFrame(rows)


def test_the_page_leads_with_one_table_of_questions_needed_that_matches_the_plan():
    """12 methods, 2 metrics, 4 kinds: the page stays short, leads with pair × metric, and each cell's count is the
    plan's (simulated, else formula) n_needed; exact ties get no sentence; the grain is named."""
    per_query, aggregate = many_methods()
    table = plan_budget(per_query, aggregate, "chunk", [("hit", 1), ("recall", 10)], "base", 0.05, seed=0,
                        simulations=60)
    page = budget_page(table, "toy", "v1", 0.05)
    lines = page.splitlines()
    assert len(lines) < 80
    first_table = next(i for i, line in enumerate(lines) if line.startswith("| "))
    assert lines[first_table] == "| pair (all 48 questions) | hit@1 | R@10 |"
    assert "## Questions needed (chunk grain, all questions)" in page
    grid = {}
    for line in lines[first_table + 2:]:
        if not line.startswith("| "):
            break
        pair, *cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        grid[pair] = dict(zip(["hit@1", "R@10"], cells))
    overall = table[table["kind"] == "all"]
    assert len(grid) == 1 + overall["pair"].eq("vs baseline").sum() // 2
    for _, row in overall.iterrows():
        label = "hit@1" if row["metric"] == "hit" else "R@10"
        pair = "best − runner-up" if row["pair"] == "best vs runner-up" else f"{row['method_a']} − {row['method_b']}"
        cell = grid[pair][label]
        if np.isnan(row["n_needed"]):
            assert "tie" in cell and "Δ = 0" in cell
            continue
        assert f"{row['diff']:+.3f}: {int(row['n_needed']):,}" in cell
        assert cell.endswith("✓") == (row["n_needed"] <= row["n"])
    assert "tie on" not in page  # no sentence about exact ties


def test_quantiles_equal_scipy_stats_bit_for_bit():
    """t and normal quantiles from scipy.special (no scipy.stats import) are scipy.stats's numbers exactly."""
    from scipy import stats as sps

    for alpha in (0.05, 0.05 / 11, 0.01 / 3):
        for n in (1, 2, 3, 10, 58, 2000, 1_000_001):
            expected = (sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(0.8) if n < 2 or n > 1_000_000
                        else sps.t.ppf(1 - alpha / 2, n - 1) + sps.t.ppf(0.8, n - 1))
            assert _quantiles(alpha, 0.8, n) == float(expected)


@pytest.mark.parametrize("baseline", ["good", "best"])
def test_a_pair_that_matters_twice_gets_one_count(baseline: str) -> None:
    """The runner-up (or the best) is the baseline: best vs runner-up and the vs-baseline row are the same pair, so
    the page gives one count for it (it gave 55 and 57: each row had its own simulation seed)."""
    per_query, aggregate = toy_metrics(0)
    aggregate = aggregate.assign(mean=aggregate["mean"].where(aggregate["method"] != "best", 0.9))
    table = plan_budget(per_query, aggregate, "document", [("hit", 1)], baseline, 0.05, seed=0)
    for _, rows in table.groupby("kind"):
        top = rows[rows["pair"] == "best vs runner-up"].iloc[0]
        same = rows[(rows["pair"] == "vs baseline") & (rows[["method_a", "method_b"]].apply(set, axis=1)
                                                       == {top["method_a"], top["method_b"]})]
        assert len(same) == 1
        twin = same.iloc[0]
        for column in ("n_needed", "power_at_needed", "mdd", "simulated"):
            assert twin[column] == top[column] or (np.isnan(twin[column]) and np.isnan(top[column]))
        assert twin["diff"] == (top["diff"] if twin["method_a"] == top["method_a"] else -top["diff"])


@pytest.mark.parametrize("alpha", [1e-7, 1e-17, 1e-300])
def test_a_tiny_alpha_needs_a_finite_count_matching_the_normal_formula(alpha: float) -> None:
    """`1 - alpha / 2` rounds to 1 below alpha = 1e-16: the quantile was infinite and `gate --alpha 1e-300` (or
    report.alpha: 1e-17 on the budget page) ended in an OverflowError traceback."""
    import scipy.stats as sps

    needed = normal_n(0.1, 1.0, alpha)
    reference = ((sps.norm.isf(alpha / 2) + sps.norm.ppf(0.8)) * 1.0 / 0.1) ** 2  # large n: t is normal
    assert np.isfinite(needed) and reference <= needed <= 1.01 * reference + 1
    assert _quantiles(alpha, 0.8, 50) == pytest.approx(sps.t.isf(alpha / 2, 49) + sps.t.ppf(0.8, 49), rel=1e-9)
    assert np.isinf(normal_n(0.1, 1.0, 5e-324))  # alpha / 2 underflows to 0: no count, said as such
    row = plan_pair(np.array([0.1, 0.3, -0.05, 0.2]), 5e-324, seed=0)
    assert "about ∞ questions" in budget_finding(pd.Series({**row, "kind": "all", "metric": "ndcg", "k": 10,
                                                             "method_a": "a", "method_b": "b"}))
