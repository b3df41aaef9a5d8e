"""rankbench.evaluation: grains, grade distribution, and the statistics of the aggregate and the pairs table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation.experiment import compare
from rankbench.evaluation.metrics import (
    GRADE_LABELS,
    POLLUTION_METRICS,
    grades_by_rank,
    per_query_metrics,
)
from rankbench.evaluation.scoring import (
    AGGREGATE_COLUMNS,
    PAIRS_COLUMNS,
    TIERS_COLUMNS,
    aggregate,
    evaluate_run,
    grade_distribution,
    tier_table,
)
from rankbench.evaluation.stats import holm, method_pairs, paired_comparison
from rankbench.retrieval.registry import method_grains

KS = [1, 3, 5]
METHODS = ("bm25", "dense", "hybrid", "rerank")


def chunk_run(rng: np.random.Generator, n_q: int = 40) -> pd.DataFrame:
    rows = []
    for q in range(n_q):
        chunks = rng.choice(45, 8, replace=False)
        rows += [(f"q{q}", rank, f"d{c // 3}#s{c % 3}", f"d{c // 3}", 1.0 / rank) for rank, c in enumerate(chunks, 1)]
    return pd.DataFrame(rows, columns=["qid", "rank", "chunk_id", "doc_id", "score"])


@pytest.fixture(scope="module")
def case() -> tuple[dict[str, pd.DataFrame], pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(0)
    questions = pd.DataFrame({"qid": [f"q{i}" for i in range(44)], "kind": rng.choice(["exact", "paraphrase"], 44)})
    chunk_labels = [("chunk", f"q{q}", f"d{c // 3}#s{c % 3}", int(rng.integers(0, 4)))
                    for q in range(42) for c in rng.choice(45, 6, replace=False)]
    qrels = pd.DataFrame(chunk_labels, columns=["grain", "qid", "item_id", "grade"])
    documents = (qrels.assign(item_id=qrels["item_id"].str.split("#").str[0])
                 .groupby(["qid", "item_id"], as_index=False)["grade"].max().assign(grain="document"))
    qrels = pd.concat([qrels, documents], ignore_index=True)
    runs = {m: chunk_run(rng) for m in METHODS}
    per_query = {m: evaluate_run(run, questions, qrels, KS) for m, run in runs.items()}
    return runs, questions, qrels, per_query


def test_grains_and_pollution_rows(case) -> None:
    runs, questions, qrels, per_query = case
    table = per_query["bm25"]
    assert set(table["grain"]) == {"chunk", "document"}
    assert set(table.loc[table["grain"] == "chunk", "metric"]) >= set(POLLUTION_METRICS)
    assert not set(table.loc[table["grain"] == "document", "metric"]) & set(POLLUTION_METRICS)
    only_documents = evaluate_run(runs["bm25"], questions, qrels, KS, grains=method_grains({"type": "external"}))
    assert set(only_documents["grain"]) == {"document"}
    assert only_documents.equals(table[table["grain"] == "document"].reset_index(drop=True))
    assert method_grains({"type": "bm25"}) == ["document", "chunk"]


def test_grade_distribution_counts_the_grade_matrix(case) -> None:
    runs, questions, qrels, _ = case
    table = grade_distribution(runs["dense"], questions, qrels, k=5)
    assert np.allclose(table.groupby(["grain", "kind", "rank"])["share"].sum(), 1.0)
    chunk_all = table[(table["grain"] == "chunk") & (table["kind"] == "all")]
    chunk_qrels = qrels.loc[qrels["grain"] == "chunk", ["qid", "item_id", "grade"]]
    qids, codes = grades_by_rank(runs["dense"].rename(columns={"chunk_id": "item_id"}), chunk_qrels, 5)
    for code, label in enumerate(GRADE_LABELS):
        expected = (codes == code).sum(axis=0)
        assert chunk_all.loc[chunk_all["grade"] == label, "count"].tolist() == expected.tolist(), label
    kinds = table[(table["grain"] == "chunk") & (table["kind"] != "all") & (table["rank"] == 1)]
    assert kinds.groupby("kind")["n"].first().sum() == len(qids)


def test_aggregate_baseline_columns_are_the_baseline_pairs_seen_from_the_method(case) -> None:
    _, questions, _, per_query = case
    table, pairs = aggregate(per_query, questions, "demo", "v1", n_resamples=500, seed=1, baseline="bm25")
    assert list(table.columns) == AGGREGATE_COLUMNS and list(pairs.columns) == PAIRS_COLUMNS
    assert len(pairs) == len(table) // len(METHODS) * 6  # 4 methods: 6 pairs per (grain, kind, metric, k)
    base = table[table["method"] == "bm25"]
    assert base["diff"].isna().all() and base["wins"].isna().all()
    others = table[table["method"] != "bm25"]
    assert others[["diff", "diff_low", "diff_high", "p_randomization", "p_t", "p_holm"]].notna().all().all()
    keys = ["grain", "kind", "metric", "k"]
    merged = others.merge(pairs[pairs["is_baseline_pair"]], left_on=keys + ["method"], right_on=keys + ["method_b"],
                          suffixes=("", "_pair"))
    assert len(merged) == len(others)
    assert np.allclose(merged["diff"], -merged["diff_pair"])
    assert np.allclose(merged["diff_low"], -merged["diff_high_pair"])
    assert np.allclose(merged["d_z"], -merged["d_z_pair"], equal_nan=True)
    assert np.allclose(merged["d_z_low"], -merged["d_z_high_pair"], equal_nan=True)
    assert (merged["wins"] == merged["losses_pair"]).all() and (merged["losses"] == merged["wins_pair"]).all()
    assert np.allclose(merged["mean"] - merged["mean_a"], merged["diff"])
    # Holm family in the aggregate: the non-baseline methods of one (grain, kind, metric, k).
    for _, family in others.groupby(keys):
        assert np.allclose(family["p_holm"], holm(family["p_randomization"].to_numpy()))
    # Holm family in the pairs table: every pair of one (grain, kind, metric, k).
    for _, family in pairs.groupby(keys):
        assert np.allclose(family["p_holm"], holm(family["p_randomization"].to_numpy()))
    # Within one question's worth: one question's own difference is at least the net one (0 < |sum d| <= max |d|).
    values = {m: frame.set_index(["grain", "metric", "k", "qid"])["value"].sort_index()
              for m, frame in per_query.items()}
    for row in others[others["kind"] == "all"].itertuples():
        d = (values[row.method] - values["bm25"]).loc[(row.grain, row.metric, row.k)].to_numpy()
        assert row.below_one_question == (1e-12 < abs(d.sum()) <= np.abs(d).max() * (1 + 1e-9))
    assert not (others["below_one_question"] & (others["p_randomization"] < 0.5)).any()
    kinds = table[(table["kind"] != "all")].groupby(["method", "grain", "metric", "k"])["n"].sum()
    assert (kinds == table[table["kind"] == "all"].set_index(["method", "grain", "metric", "k"])["n"]).all()


def test_pairs_equal_paired_comparison_on_one_metric(case) -> None:
    _, questions, _, per_query = case
    _, pairs = aggregate(per_query, questions, "demo", "v1", n_resamples=500, seed=2, baseline="dense")
    ours = pairs[(pairs["grain"] == "document") & (pairs["kind"] == "all") & (pairs["metric"] == "ndcg")
                 & (pairs["k"] == 5)].reset_index(drop=True)
    wide = pd.DataFrame({m: frame[(frame["grain"] == "document") & (frame["metric"] == "ndcg") & (frame["k"] == 5)]
                         .set_index("qid")["value"] for m, frame in per_query.items()})
    expected_pairs = method_pairs(sorted(wide.columns), "dense")
    a = np.stack([wide[x].to_numpy() for x, _, _ in expected_pairs])
    b = np.stack([wide[y].to_numpy() for _, y, _ in expected_pairs])
    reference = paired_comparison(a, b, n_resamples=500, seed=2)
    reference["p_holm"] = holm(reference["p_randomization"])
    assert ours[["method_a", "method_b"]].values.tolist() == [[x, y] for x, y, _ in expected_pairs]
    for column in ("diff", "diff_low", "diff_high", "d_z", "d_z_low", "d_z_high", "p_randomization", "p_t", "p_holm"):
        assert np.allclose(ours[column], reference[column], atol=1e-12, equal_nan=True), column
    assert ours["d_z"].notna().any()
    for column in ("wins", "ties", "losses"):
        assert (ours[column].to_numpy() == reference[column]).all(), column
    assert (ours["n"] == len(wide)).all()


def test_no_baseline_leaves_the_columns_empty_and_stats_are_deterministic(case) -> None:
    _, questions, _, per_query = case
    table, pairs = aggregate(per_query, questions, "demo", "v1", n_resamples=300)
    assert table["diff"].isna().all() and not pairs["is_baseline_pair"].any()
    again, _ = aggregate(per_query, questions, "demo", "v1", n_resamples=300)
    pd.testing.assert_frame_equal(table, again)


def test_pairs_use_the_questions_both_methods_evaluate(case) -> None:
    _, questions, _, per_query = case
    fewer = per_query["hybrid"][per_query["hybrid"]["qid"] != "q0"]
    _, pairs = aggregate({"bm25": per_query["bm25"], "hybrid": fewer}, questions, "d", "v", n_resamples=200,
                         baseline="bm25")
    n_all = per_query["bm25"].loc[per_query["bm25"]["grain"] == "document", "qid"].nunique()
    assert (pairs.loc[(pairs["kind"] == "all") & (pairs["grain"] == "document"), "n"] == n_all - 1).all()


def test_compare_keeps_requested_order(case) -> None:
    runs, _, qrels, _ = case
    document_qrels = qrels.loc[qrels["grain"] == "document", ["qid", "item_id", "grade"]]
    result = compare(document_qrels, {"rerank": runs["rerank"], "bm25": runs["bm25"]}, ["ndcg@5", "Rprec"],
                     n_resamples=200, baseline="rerank")
    per_query, summary = result.per_query, result.summary
    assert summary[["metric", "method"]].values.tolist() == [["ndcg", "rerank"], ["ndcg", "bm25"],
                                                             ["r_precision", "rerank"], ["r_precision", "bm25"]]
    assert set(per_query["metric"]) == {"ndcg", "r_precision"}
    assert summary["diff"].isna().tolist() == [True, False, True, False]


def test_extra_metrics_are_computed_on_request_at_every_grain(case) -> None:
    """evaluation.metrics: the parity metrics join the standard ones at both grains, equal to per_query_metrics,
    with RBP's persistence passed through; an unknown name is refused."""
    runs, questions, qrels, per_query = case
    extra = evaluate_run(runs["bm25"], questions, qrels, KS, extra_metrics=["bpref", "err", "rbp"], rbp_p=0.5)
    standard = per_query["bm25"]
    assert set(extra["metric"]) == set(standard["metric"]) | {"bpref", "err", "rbp"}
    assert set(extra.loc[extra["metric"] == "bpref", "k"]) == {0}
    assert set(extra.loc[extra["metric"] == "err", "k"]) == set(KS)
    assert set(extra.loc[extra["metric"] == "rbp", "grain"]) == {"chunk", "document"}
    pd.testing.assert_frame_equal(extra[~extra["metric"].isin(["bpref", "err", "rbp"])].reset_index(drop=True),
                                  standard)
    chunk_run_ = runs["bm25"].assign(item_id=runs["bm25"]["chunk_id"])[["qid", "item_id", "rank", "score"]]
    direct = per_query_metrics(chunk_run_, qrels.loc[qrels["grain"] == "chunk", ["qid", "item_id", "grade"]], KS,
                               metrics=["rbp"], rbp_p=0.5)
    ours = extra[(extra["metric"] == "rbp") & (extra["grain"] == "chunk")]
    assert np.allclose(ours.sort_values("qid")["value"], direct.sort_values("qid")["value"])
    with pytest.raises(ValueError, match="unknown extra metric"):
        evaluate_run(runs["bm25"], questions, qrels, KS, extra_metrics=["map"])


def test_tier_table_ranks_by_mean_and_tiers_follow_the_pairs(case) -> None:
    """Per (grain, kind, metric, k): tier a holds the best method and exactly those whose Holm-corrected p against
    it is >= alpha; rank is the rank of the mean; rank intervals contain the rank and are deterministic."""
    _, questions, _, per_query = case
    summary, pairs = aggregate(per_query, questions, "demo", "v1", n_resamples=300, seed=4, baseline="bm25")
    headline = [("ndcg", 5), ("hit", 1)]
    table = tier_table(per_query, summary, pairs, headline, alpha=0.05, n_resamples=300, seed=4)
    assert list(table.columns) == TIERS_COLUMNS[2:]
    assert set(zip(table["metric"], table["k"])) == set(headline)
    assert len(table) == len(METHODS) * 2 * 3 * 2  # methods x grains x kinds (all + 2) x metrics
    for (grain, kind, metric, k), group in table.groupby(["grain", "kind", "metric", "k"]):
        group = group.set_index("method")
        best = group["mean"].idxmax()
        assert group.loc[best, "tier"] == "a" and group.loc[best, "rank"] == 1
        rows = pairs[(pairs["grain"] == grain) & (pairs["kind"] == kind) & (pairs["metric"] == metric)
                     & (pairs["k"] == k) & ((pairs["method_a"] == best) | (pairs["method_b"] == best))]
        other = np.where(rows["method_a"] == best, rows["method_b"], rows["method_a"])
        adjusted = dict(zip(other, holm(rows["p_randomization"].to_numpy())))
        expected_a = {best} | {m for m, p in adjusted.items()
                               if p >= 0.05 or group.loc[m, "mean"] >= group.loc[best, "mean"]}
        assert set(group.index[group["tier"] == "a"]) == expected_a
        assert (group["rank"] == [1 + int((group["mean"] > m).sum()) for m in group["mean"]]).all()
        assert ((group["rank_low"] <= group["rank"]) & (group["rank"] <= group["rank_high"])).all()
    pd.testing.assert_frame_equal(table, tier_table(per_query, summary, pairs, headline, alpha=0.05, n_resamples=300,
                                                    seed=4))
