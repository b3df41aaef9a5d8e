"""Breakdown tables (every metric per kind, per tag, per difficulty): means and CIs against a direct computation on
random per-question values, Holm within a table against statsmodels, and the page's lines where a breakdown is
absent."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from rankbench.evaluation.scoring import MAX_GROUPS, breakdown_aggregate, breakdown_groups, largest_groups
from rankbench.report.breakdowns import breakdown_sections, kinds_not_applicable
from rankbench.report.comparison import plots_line
from rankbench.report.tables import group_order, group_tables, holm_within

TAGS = ("billing", "login", "refund")


def random_set(seed: int, n: int = 120) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Two methods' per-question nDCG@10 (b a little better), questions with 0-2 random tags and a difficulty."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i:03d}" for i in range(n)]
    tags = [sorted(rng.choice(TAGS, size=rng.integers(0, 3), replace=False).tolist()) for _ in qids]
    difficulty = [None if i % 7 == 0 else str(rng.choice(["easy", "medium", "hard"])) for i in range(n)]
    questions = pd.DataFrame({"qid": qids, "kind": "answerable", "tags": tags, "difficulty": difficulty})
    base = rng.uniform(0, 1, n)
    per_query = {method: pd.DataFrame({"qid": qids, "kind": "answerable", "grain": "document", "metric": "ndcg",
                                       "k": 10, "value": np.clip(base + shift + rng.normal(0, 0.1, n), 0, 1)})
                 for method, shift in (("a", 0.0), ("b", 0.05))}
    return per_query, questions


def test_breakdown_means_and_cis_match_a_direct_computation() -> None:
    per_query, questions = random_set(7)
    table = breakdown_aggregate(per_query, questions, "d", "v1", n_resamples=20_000, seed=1, baseline="a")
    values = {m: frame.set_index("qid")["value"] for m, frame in per_query.items()}
    checked = 0
    for _, row in table.iterrows():
        if row["breakdown"] == "tags":
            members = [q for q, tags in zip(questions["qid"], questions["tags"]) if row["kind"] in tags]
        else:
            members = questions.loc[questions["difficulty"] == row["kind"], "qid"].tolist()
        x = values[row["method"]].loc[members].to_numpy()
        assert row["n"] == len(members) and row["n_excluded"] == 0
        assert row["mean"] == np.float64(x.mean())  # the same numbers in the same order: bit for bit
        half = 1.96 * x.std(ddof=1) / np.sqrt(len(x))  # the bootstrap's percentile CI is close to the normal one
        assert abs(row["ci_low"] - (x.mean() - half)) < 0.25 * half
        assert abs(row["ci_high"] - (x.mean() + half)) < 0.25 * half
        checked += 1
    assert checked == 2 * (len(TAGS) + 3)


def test_no_tags_and_no_difficulty_give_no_groups_and_an_empty_breakdown() -> None:
    per_query, questions = random_set(3, n=10)
    bare = questions.drop(columns=["tags", "difficulty"])
    assert breakdown_groups(bare).empty
    assert breakdown_aggregate(per_query, bare, "d", "v1", n_resamples=100).empty


def test_holm_within_a_table_matches_statsmodels() -> None:
    rng = np.random.default_rng(11)
    rows = pd.DataFrame({"method": ["base", "x", "y", "z"] * 3, "baseline": "base",
                         "kind": np.repeat(["easy", "medium", "hard"], 4),
                         "p_randomization": rng.uniform(0, 0.1, 12), "p_holm": 0.5})
    rows.loc[rows["method"] == "base", "p_randomization"] = np.nan
    corrected = holm_within(rows)
    compared = rows["method"] != "base"
    expected = multipletests(rows.loc[compared, "p_randomization"], method="holm")[1]
    np.testing.assert_allclose(corrected.loc[compared, "p_holm"], expected, rtol=0, atol=1e-15)
    assert (corrected.loc[~compared, "p_holm"] == 0.5).all()  # the baseline's own rows are left as they were


def test_a_mark_holds_for_the_whole_table() -> None:
    """Per group, b beats the baseline with raw p = 0.02 (Holm within the group alone: 0.02 < 0.05); over the
    table's three comparisons Holm makes it 0.06, so no cell is marked."""
    rows = pd.DataFrame({"method": ["a", "b"] * 3, "baseline": "a", "grain": "document",
                         "kind": np.repeat(["easy", "medium", "hard"], 2), "metric": "ndcg", "k": 10,
                         "mean": [0.5, 0.6] * 3, "ci_low": 0.4, "ci_high": 0.7, "n": 20, "n_excluded": 0,
                         "diff": [np.nan, 0.1] * 3, "p_randomization": [np.nan, 0.02] * 3,
                         "p_holm": [np.nan, 0.02] * 3, "below_one_question": False})
    lines = group_tables(rows, "document", [("ndcg", 10)], True, ["a", "b"], 0.05, "Per difficulty")
    text = "\n".join(lines)
    assert "| easy (n=20/20) | medium (n=20/20) | hard (n=20/20) |" in text
    assert "↑" not in text and "**0.600** [0.400, 0.700]" in text
    marked = group_tables(rows.assign(p_randomization=[np.nan, 0.01] * 3), "document", [("ndcg", 10)], True,
                          ["a", "b"], 0.05, "Per difficulty")
    assert "↑" in "\n".join(marked)


def test_groups_read_easy_medium_hard_then_alphabetically() -> None:
    assert group_order(["zeta", "hard", "alpha", "easy"]) == ["easy", "hard", "alpha", "zeta"]


def test_absent_breakdowns_say_why() -> None:
    aggregate = pd.DataFrame({"method": ["a"], "grain": "document", "kind": ["beir"], "metric": "ndcg", "k": 10})
    text = "\n".join(breakdown_sections(aggregate, None, "document", [("ndcg", 10)], True, ["a"], 0.05))
    assert "every question is of one kind (beir)" in text
    assert "no question of this version has a `tags` field" in text
    assert "no question of this version has a `difficulty` field" in text
    assert "|" not in text  # no empty table


def test_the_plot_links_name_the_per_kind_heatmap_only_for_two_kinds_or_more() -> None:
    one_kind = pd.DataFrame({"kind": ["all", "beir"]})
    several = pd.DataFrame({"kind": ["all", "answerable", "unanswerable"]})
    assert "plots/kinds.svg" not in plots_line(one_kind) and "](plots/bars.svg)" in plots_line(one_kind)
    assert plots_line(several) == ("- plots: [bars](plots/bars.svg), [recall@k](plots/recall.svg), [by question kind]"
                                   "(plots/kinds.svg), [mean grade by rank](plots/grades.svg), "
                                   "[calibration](plots/calibration.svg)")


@pytest.mark.parametrize(("evaluated", "asked", "said"), [
    (["answerable"], {"answerable": 10, "unanswerable": 2},
     "every evaluated question (with a relevant label) is of one kind (answerable); the other questions have no "
     "relevant label, so no metric is computed on them (2 unanswerable questions)."),
    (["answerable"], {"answerable": 10, "unanswerable": 1, "chitchat": 3},
     "(3 chitchat questions; 1 unanswerable question)"),
    (["beir"], {"beir": 40}, "every question is of one kind (beir); a native question set"),
    ([], {"unanswerable": 4}, "no question has a relevant label, so no kind has a metric (4 unanswerable questions)"),
])
def test_the_per_kind_line_counts_every_question(evaluated: list[str], asked: dict[str, int], said: str) -> None:
    """Before: "every question is of one kind (answerable)" on a set holding 2 unanswerable questions."""
    text = kinds_not_applicable(evaluated, asked)
    assert text.startswith("Not applicable: ") and said in text
    if len(asked) > 1:
        assert "every question is of one kind" not in text


def test_the_page_names_the_unanswerable_questions_the_aggregate_leaves_out() -> None:
    aggregate = pd.DataFrame({"method": ["a", "a"], "grain": "document", "kind": ["all", "answerable"],
                              "metric": "ndcg", "k": 10})
    questions = pd.DataFrame({"qid": ["q1", "q2", "q3"], "kind": ["answerable", "unanswerable", "unanswerable"]})
    text = "\n".join(breakdown_sections(aggregate, None, "document", [("ndcg", 10)], True, ["a"], 0.05, questions))
    assert "every question is of one kind" not in text and "(2 unanswerable questions)" in text


def test_thousands_of_tags_on_a_few_questions_take_seconds_and_the_page_says_what_it_shows() -> None:
    """Before: 12 questions with 10,000 distinct tags kept the aggregate and comparison_table jobs busy for minutes
    (a bootstrap and a column per tag). Now the MAX_GROUPS largest tags are computed and shown, and the page says so."""
    n, spread = 12, 1000
    qids = [f"q{i:02d}" for i in range(n)]
    # t0000 is on every question, t0001 on half of them, then each tag on one question.
    tags = [["t0000", *(["t0001"] if i % 2 else []), *[f"x{j:04d}" for j in range(spread) if j % n == i]]
            for i in range(n)]
    questions = pd.DataFrame({"qid": qids, "kind": "answerable", "tags": tags, "difficulty": None})
    rng = np.random.default_rng(0)
    per_query = {m: pd.DataFrame({"qid": qids, "kind": "answerable", "grain": "document", "metric": "ndcg", "k": 10,
                                  "value": rng.uniform(0, 1, n)}) for m in ("a", "b")}
    started = time.perf_counter()
    table = breakdown_aggregate(per_query, questions, "d", "v1", n_resamples=1000, baseline="a")
    aggregate = pd.DataFrame({"method": ["a", "b"], "grain": "document", "kind": "answerable", "metric": "ndcg",
                              "k": 10})
    text = "\n".join(breakdown_sections(aggregate, table, "document", [("ndcg", 10)], True, ["a", "b"], 0.05,
                                        questions))
    assert time.perf_counter() - started < 15
    shown = sorted(table["kind"].unique())
    assert len(shown) == MAX_GROUPS and {"t0000", "t0001"} <= set(shown)
    assert shown == largest_groups(breakdown_groups(questions)["group"].value_counts().to_dict())
    assert f"1,002 tags: the {MAX_GROUPS} with the most questions are shown (ties by name); the other 972 hold at " \
           "most 1 question each" in text
    header = next(line for line in text.splitlines() if line.startswith("| method |"))
    assert header.count("(n=") == MAX_GROUPS and "t0000 (n=12/12)" in header and "t0001 (n=6/6)" in header


def test_a_breakdown_of_many_kinds_shows_the_largest_and_says_so() -> None:
    kinds = [f"k{i:02d}" for i in range(40)]
    rows = pd.DataFrame({"method": "a", "baseline": None, "grain": "document", "kind": kinds, "metric": "ndcg",
                         "k": 10, "mean": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": np.arange(40) + 1,
                         "n_excluded": 0, "diff": np.nan, "p_randomization": np.nan, "p_holm": np.nan,
                         "below_one_question": False})
    lines = group_tables(rows, "document", [("ndcg", 10)], False, ["a"], 0.05, "Per question kind")
    header = next(line for line in lines if line.startswith("| method |"))
    assert header.count("(n=") == MAX_GROUPS and "k39 (n=40/40)" in header and "k09 (n=10/10)" not in header
    aggregate = pd.concat([rows, rows.assign(kind="all", n=820)])
    text = "\n".join(breakdown_sections(aggregate, None, "document", [("ndcg", 10)], False, ["a"], 0.05))
    assert "40 question kinds: the 30 with the most questions are shown (ties by name); the other 10 hold at most " \
           "10 questions each and are left out of these tables (`aggregate.parquet` has every kind" in text


def test_the_per_kind_heatmap_shows_the_largest_kinds() -> None:
    from rankbench.report.plots import kind_heatmap

    rows = pd.DataFrame({"method": "a", "grain": "document", "kind": [f"k{i:02d}" for i in range(40)] + ["all"],
                         "metric": "ndcg", "k": 10, "mean": 0.5, "n": [*range(1, 41), 820]})
    figure = kind_heatmap(rows, "document", "ndcg", 10, "by kind")
    axis = figure.axes[0]
    assert len(axis.get_xticks()) == 1 + MAX_GROUPS and axis.get_title() == "by kind (the 30 largest of 40 kinds)"


def test_groups_smaller_than_the_minimum_are_counted_not_tabled() -> None:
    """Before: 27 questions gave 40 tag and difficulty tables of mostly one-question groups, each a column."""
    per_query, questions = random_set(11, n=40)
    questions["tags"] = [["billing"] if i < 30 else [f"rare{i}"] for i in range(40)]  # 10 one-question tags
    table = breakdown_aggregate(per_query, questions, "d", "v1", n_resamples=200, seed=1, baseline="a")
    aggregate = pd.DataFrame({"method": ["a", "b"], "grain": "document", "kind": "answerable", "metric": "ndcg",
                              "k": 10})
    text = "\n".join(breakdown_sections(aggregate, table, "document", [("ndcg", 10)], True, ["a", "b"], 0.05,
                                        questions, minimum=5))
    tag_table = text.split("### Per tag: nDCG@10")[1].split("###")[0]
    header = next(line for line in tag_table.splitlines() if line.startswith("| method |"))
    assert header.count("(n=") == 1 and "billing (n=30/30)" in header and "rare" not in header
    assert "10 tags with fewer than 5 questions evaluated are counted, not tabled" in text
    assert "rare30 (1), rare31 (1)" in text and "and 0 more" not in text
    # every group tabled at a minimum of 1, as before
    every = "\n".join(breakdown_sections(aggregate, table, "document", [("ndcg", 10)], True, ["a", "b"], 0.05,
                                         questions))
    assert "counted, not tabled" not in every and "rare39 (n=1/1)" in every


def test_a_breakdown_of_small_groups_only_has_no_table_and_names_at_most_twelve() -> None:
    per_query, questions = random_set(12, n=20)
    questions["tags"] = [[f"t{i:02d}"] for i in range(20)]
    table = breakdown_aggregate(per_query, questions, "d", "v1", n_resamples=200, seed=1, baseline="a")
    aggregate = pd.DataFrame({"method": ["a"], "grain": "document", "kind": "answerable", "metric": "ndcg", "k": 10})
    text = "\n".join(breakdown_sections(aggregate, table, "document", [("ndcg", 10)], True, ["a", "b"], 0.05,
                                        questions, minimum=3))
    assert "### Per tag:" not in text  # no table of no column
    assert "20 tags with fewer than 3 questions evaluated are counted" in text and "and 8 more." in text
    assert "1 difficulty with fewer than 3 questions evaluated is counted, not tabled" in text
