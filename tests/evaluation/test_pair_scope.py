"""The aggregate compares every pair of methods only at the metrics a page or a decision reads (the headline and
margin metrics), the pairs with the baseline elsewhere: the same numbers where pairs remain, and a cost that grows
with the methods, not with their square, at every other metric."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.evaluation.scoring import aggregate, breakdown_aggregate

METRICS = [("ndcg", 10), ("recall", 10), ("precision", 5), ("hit", 1)]


def per_query_set(methods: int, n: int = 30, seed: int = 0) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Random per-question values of `methods` methods at METRICS, two grains, two kinds; one method misses some
    questions (its pairs are computed on fewer questions: a batch of their own)."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i:02d}" for i in range(n)]
    kinds = ["answerable" if i % 3 else "paraphrase" for i in range(n)]
    questions = pd.DataFrame({"qid": qids, "kind": kinds, "tags": [["a"] if i % 2 else ["b"] for i in range(n)],
                              "difficulty": "easy"})
    per_query = {}
    for m in range(methods):
        rows = [(q, kind, grain, metric, k, float(rng.uniform()))
                for q, kind in zip(qids, kinds) for grain in ("document", "chunk") for metric, k in METRICS
                if not (m == 2 and q in ("q00", "q01"))]
        per_query[f"m{m}"] = pd.DataFrame(rows, columns=["qid", "kind", "grain", "metric", "k", "value"])
    return per_query, questions


def test_pairs_are_every_pair_at_the_metrics_read_and_baseline_pairs_elsewhere_with_the_same_numbers() -> None:
    per_query, questions = per_query_set(5)
    margins = {("ndcg", 10): 0.05}
    full_table, full_pairs = aggregate(per_query, questions, "d", "v1", n_resamples=500, baseline="m0",
                                       margins=margins)
    table, pairs = aggregate(per_query, questions, "d", "v1", n_resamples=500, baseline="m0", margins=margins,
                             every_pair={("ndcg", 10), ("hit", 1)})
    pd.testing.assert_frame_equal(table, full_table)  # the baseline columns do not move
    read = full_pairs["metric"].isin(["ndcg", "hit"])
    pd.testing.assert_frame_equal(pairs[pairs["metric"].isin(["ndcg", "hit"])].reset_index(drop=True),
                                  full_pairs[read].reset_index(drop=True))
    rest = pairs[~pairs["metric"].isin(["ndcg", "hit"])]
    assert len(rest) and rest["is_baseline_pair"].all() and (rest["method_a"] == "m0").all()
    expected = full_pairs[~read & full_pairs["is_baseline_pair"]].reset_index(drop=True)
    columns = [c for c in pairs.columns if c != "p_holm"]  # Holm over the pairs there are
    pd.testing.assert_frame_equal(rest[columns].reset_index(drop=True), expected[columns])


def test_the_pairs_grow_linearly_in_the_methods_away_from_the_metrics_read() -> None:
    counts = {}
    for methods in (4, 8):
        per_query, questions = per_query_set(methods)
        _, pairs = aggregate(per_query, questions, "d", "v1", n_resamples=50, baseline="m0",
                             every_pair={("ndcg", 10)})
        counts[methods] = pairs[pairs["metric"] != "ndcg"].shape[0]
    # grains (2) × kinds incl. all (3) × the 3 other metrics × the methods other than the baseline
    assert counts == {4: 2 * 3 * 3 * 3, 8: 2 * 3 * 3 * 7}


def test_the_breakdowns_keep_their_baseline_columns_without_any_other_pair() -> None:
    per_query, questions = per_query_set(4)
    table = breakdown_aggregate(per_query, questions, "d", "v1", n_resamples=300, baseline="m0")
    compared = table[table["method"] != "m0"]
    assert compared["diff"].notna().all() and compared["p_holm"].notna().all()
    values = {m: frame.set_index(["qid", "grain", "metric", "k"])["value"] for m, frame in per_query.items()}
    tagged = set(questions.loc[questions["tags"].map(lambda tags: "a" in tags), "qid"])
    row = compared[(compared["method"] == "m1") & (compared["kind"] == "a") & (compared["grain"] == "chunk")
                   & (compared["metric"] == "ndcg")].iloc[0]
    diff = (values["m1"] - values["m0"]).reset_index()
    diff = diff[(diff["qid"].isin(tagged)) & (diff["grain"] == "chunk") & (diff["metric"] == "ndcg")]
    assert np.isclose(row["diff"], diff["value"].mean())
