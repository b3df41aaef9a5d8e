"""Tests of rankbench.evaluation: qrels at both grains, per-query metrics vs pytrec_eval, aggregates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation.scoring import (
    AGGREGATE_COLUMNS,
    PER_QUERY_COLUMNS,
    aggregate,
    dictionary_coded,
    evaluate_run,
    grade_distribution,
)
from rankbench.io.qrels import build_qrels
from rankbench.io.ranked_lists import RUN_COLUMNS, collapse_to_documents

pytrec_eval = pytest.importorskip("pytrec_eval")

CHUNKS = pd.DataFrame({
    "chunk_id": ["d1#a", "d1#b", "d1#b~2", "d2@0", "d2@100", "d3#x", "d4#_intro"],
    "doc_id": ["d1", "d1", "d1", "d2", "d2", "d3", "d4"],
    "sections": [["a"], ["b"], ["b"], ["p", "q"], ["q"], ["x"], ["_intro"]],
})


def labels_frame(rows: list[tuple[str, str, str | None, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["qid", "doc_id", "section", "grade"])


def qrels_dict(qrels: pd.DataFrame, grain: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for qid, item, grade in qrels.loc[qrels["grain"] == grain, ["qid", "item_id", "grade"]].itertuples(index=False):
        out.setdefault(qid, {})[item] = int(grade)
    return out


# --------------------------------------------------------------------------- build_qrels


def test_build_qrels_both_grains_and_unmapped() -> None:
    labels = labels_frame([
        ("q1", "d1", "b", 2), ("q1", "d1", "a", 1), ("q1", "d2", "q", 3),
        ("q2", "d2", None, 1), ("q2", "d1", "a", 0),
        ("q3", "d3", "gone", 2), ("q3", "d9", None, 1), ("q3", "d4", None, 3),
    ])
    qrels, unmapped = build_qrels(labels, CHUNKS)
    assert list(qrels.columns) == ["grain", "qid", "item_id", "grade"]
    assert qrels_dict(qrels, "document") == {
        "q1": {"d1": 2, "d2": 3}, "q2": {"d1": 0, "d2": 1}, "q3": {"d3": 2, "d4": 3, "d9": 1}}
    assert qrels_dict(qrels, "chunk") == {
        # Section labels reach every chunk of that section (split parts and windows covering it).
        "q1": {"d1#a": 1, "d1#b": 2, "d1#b~2": 2, "d2@0": 3, "d2@100": 3},
        # A label without a section reaches every chunk of its document.
        "q2": {"d2@0": 1, "d2@100": 1, "d1#a": 0},
        "q3": {"d4#_intro": 3},
    }
    assert unmapped[["qid", "doc_id", "section", "grade"]].astype(object).where(unmapped.notna(), None) \
        .values.tolist() == [["q3", "d3", "gone", 2], ["q3", "d9", None, 1]]


def test_chunk_takes_best_of_several_labels() -> None:
    # A window covering sections p and q is labelled through both: it keeps the higher grade.
    labels = labels_frame([("q1", "d2", "p", 1), ("q1", "d2", "q", 2), ("q1", "d1", None, 1), ("q1", "d1", "b", 3)])
    qrels, unmapped = build_qrels(labels, CHUNKS)
    assert qrels_dict(qrels, "chunk") == {"q1": {"d2@0": 2, "d2@100": 2, "d1#a": 1, "d1#b": 3, "d1#b~2": 3}}
    assert qrels_dict(qrels, "document") == {"q1": {"d1": 3, "d2": 2}}
    assert unmapped.empty


# --------------------------------------------------------------------------- evaluate_run vs pytrec_eval

PYTREC = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "ap", "success": "hit"}
KS = (1, 3, 5)


def sample() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    questions = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4", "q5"],
                              "kind": ["version", "paraphrase", "paraphrase", "unanswerable", "version"]})
    labels = labels_frame([
        ("q1", "d1", "b", 3), ("q1", "d2", "q", 1), ("q1", "d3", None, 0),
        ("q2", "d2", None, 2), ("q2", "d4", None, 1),
        ("q3", "d3", "x", 1),
        ("q4", "d1", None, 0),  # no relevant label: excluded
        ("q5", "d4", None, 2),  # missing from the run: scores 0
    ])
    rows = [
        ("q1", "d1#a", 0.95), ("q1", "d2@0", 0.9), ("q1", "d1#b~2", 0.8), ("q1", "d1#b", 0.7), ("q1", "d3#x", 0.6),
        ("q1", "d2@100", 0.5),
        ("q2", "d1#b", 0.9), ("q2", "d2@100", 0.8), ("q2", "d2@0", 0.7), ("q2", "d3#x", 0.6), ("q2", "d4#_intro", 0.1),
        ("q3", "d1#a", 0.4), ("q3", "d1#b", 0.3), ("q3", "d2@0", 0.2), ("q3", "d4#_intro", 0.15), ("q3", "d3#x", 0.1),
        ("q4", "d1#a", 0.5),
    ]
    run = pd.DataFrame(rows, columns=["qid", "chunk_id", "score"])
    run["doc_id"] = CHUNKS.set_index("chunk_id").loc[run["chunk_id"], "doc_id"].to_numpy()
    run["rank"] = run.groupby("qid").cumcount() + 1
    return questions, labels, run[RUN_COLUMNS]


@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_evaluate_run_matches_pytrec_eval_at_both_grains(gain: str) -> None:
    questions, labels, run = sample()
    qrels, _ = build_qrels(labels, CHUNKS)
    per_query = evaluate_run(run, questions, qrels, KS, gain=gain)
    assert list(per_query.columns) == PER_QUERY_COLUMNS
    assert set(per_query["grain"]) == {"chunk", "document"}
    assert set(per_query["qid"]) == {"q1", "q2", "q3", "q5"}  # q4 has no relevant label
    assert dict(zip(per_query["qid"], per_query["kind"])) == {"q1": "version", "q2": "paraphrase",
                                                            "q3": "paraphrase", "q5": "version"}
    grain_runs = {"chunk": run.rename(columns={"chunk_id": "item"}),
                  "document": collapse_to_documents(run).rename(columns={"doc_id": "item"})}
    measures = {f"{name}_{k}" for name in PYTREC for k in KS} | {"recip_rank"}
    for grain, grain_run in grain_runs.items():
        judgements = qrels_dict(qrels, grain)
        if gain == "exponential":
            judgements = {q: {i: 2 ** g - 1 for i, g in items.items()} for q, items in judgements.items()}
        trec_run = {q: dict(zip(g["item"], g["score"].astype(float))) for q, g in grain_run.groupby("qid")}
        reference = pytrec_eval.RelevanceEvaluator(judgements, measures).evaluate(trec_run)
        ours = per_query[per_query["grain"] == grain].set_index(["qid", "metric", "k"])["value"]
        checked = 0
        for qid in ("q1", "q2", "q3", "q5"):
            expected = reference.get(qid, {m: 0.0 for m in measures})  # missing from the run: all zero
            for name, metric in PYTREC.items():
                if gain == "exponential" and name != "ndcg_cut":
                    continue  # binary metrics do not depend on the gain (and 2^g-1 grades change nothing there)
                for k in KS:
                    assert ours[(qid, metric, k)] == pytest.approx(expected[f"{name}_{k}"], abs=1e-12), \
                        (grain, qid, metric, k)
                    checked += 1
        assert checked >= 12


def test_dictionary_coded_ids_change_no_value() -> None:
    """The workflow's coding (ids as categoricals over one vocabulary) keeps every id and gives the same metrics and
    grade shares, column types included, as the string ids."""
    questions, labels, run = sample()
    qrels, _ = build_qrels(labels, CHUNKS)
    coded_run, coded_qrels = dictionary_coded(run, qrels)
    assert isinstance(coded_run["doc_id"].dtype, pd.CategoricalDtype)
    assert coded_run["chunk_id"].dtype == coded_run["doc_id"].dtype == coded_qrels["item_id"].dtype
    assert coded_run.astype({c: str for c in ("qid", "chunk_id", "doc_id")}).equals(run)
    pd.testing.assert_frame_equal(evaluate_run(coded_run, questions, coded_qrels, KS, extra_metrics=["bpref"]),
                                  evaluate_run(run, questions, qrels, KS, extra_metrics=["bpref"]))
    pd.testing.assert_frame_equal(grade_distribution(coded_run, questions, coded_qrels, 5),
                                  grade_distribution(run, questions, qrels, 5))


def test_document_grain_uses_first_chunk_per_document() -> None:
    questions, labels, run = sample()
    qrels, _ = build_qrels(labels, CHUNKS)
    values = evaluate_run(run, questions, qrels, [1, 2]).set_index(["grain", "qid", "metric", "k"])["value"]
    # q1's chunks: d1#a (unlabelled: its label is on section b), d2@0 (1); its documents: d1 (3), d2 (1).
    assert values[("document", "q1", "precision", 2)] == 1.0
    assert values[("chunk", "q1", "precision", 2)] == 0.5  # d1#a is not in section b
    assert values[("document", "q3", "precision", 1)] == 0.0
    assert values[("document", "q5", "recall", 2)] == 0.0


# --------------------------------------------------------------------------- aggregate


def test_aggregate() -> None:
    questions, labels, run = sample()
    qrels, _ = build_qrels(labels, CHUNKS)
    per_query = {"bm25": evaluate_run(run, questions, qrels, KS),
                 "dense": evaluate_run(run[run["rank"] <= 2], questions, qrels, KS)}
    table, _ = aggregate(per_query, questions, "demo", "v1", n_resamples=500, seed=1)
    assert list(table.columns) == AGGREGATE_COLUMNS
    assert set(table["method"]) == {"bm25", "dense"}
    assert set(table["kind"]) == {"all", "version", "paraphrase"}
    assert (table["dataset"] == "demo").all() and (table["qset"] == "v1").all()
    # One row per (method, grain, kind, metric, k).
    assert not table.duplicated(["method", "grain", "kind", "metric", "k"]).any()
    for method in ("bm25", "dense"):
        for grain in ("chunk", "document"):
            assert ((table["method"] == method) & (table["grain"] == grain) & (table["kind"] == "all")).any()

    expected_n = {"all": (4, 1), "version": (2, 0), "paraphrase": (2, 0)}  # q4 (unanswerable) excluded
    for row in table.itertuples(index=False):
        values = per_query[row.method]
        chosen = values[(values["grain"] == row.grain) & (values["metric"] == row.metric) & (values["k"] == row.k)]
        if row.kind != "all":
            chosen = chosen[chosen["kind"] == row.kind]
        assert row.mean == pytest.approx(chosen["value"].mean(), abs=1e-12)
        assert (row.n, row.n_excluded) == expected_n[row.kind]
        assert row.n == chosen["qid"].nunique()
        assert row.ci_low - 1e-12 <= row.mean <= row.ci_high + 1e-12
        assert 0.0 <= row.ci_low <= row.ci_high <= max(1.0, chosen["value"].max())

    deep = table[(table["method"] == "bm25") & (table["grain"] == "chunk") & (table["kind"] == "all")
                 & (table["metric"] == "recall") & (table["k"] == 5)].iloc[0]
    assert deep.ci_low < deep.ci_high  # the questions differ, so the interval is not a point
    # Reproducible with the same seed.
    pd.testing.assert_frame_equal(table, aggregate(per_query, questions, "demo", "v1", n_resamples=500, seed=1)[0])


def test_aggregate_counts_kind_with_only_unanswerable_questions() -> None:
    questions = pd.DataFrame({"qid": ["a", "b", "c"], "kind": ["x", "x", "y"]})
    per_query = pd.DataFrame({"qid": ["a", "b"], "kind": ["x", "x"], "grain": "chunk", "metric": "hit", "k": 1,
                              "value": [1.0, 0.0]})
    table, _ = aggregate({"m": per_query}, questions, "d", "v", n_resamples=200)
    rows = {row.kind: row for row in table.itertuples(index=False)}
    assert set(rows) == {"all", "x"}
    assert (rows["all"].n, rows["all"].n_excluded, rows["all"].mean) == (2, 1, 0.5)
    assert (rows["x"].n, rows["x"].n_excluded) == (2, 0)
    assert np.isclose(rows["x"].mean, 0.5)
