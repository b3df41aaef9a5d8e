"""Robustness of the verdict: label perturbations, unjudged bounds checked against pytrec_eval, survival counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.analysis.robustness import (
    drop_labels,
    judge_effects,
    kendall_tau,
    robustness,
    shift_grades,
    verdicts,
)
from rankbench.evaluation.ppi import ppi_mean
from rankbench.report.robustness import headline_findings, robustness_page

pytrec_eval = pytest.importorskip("pytrec_eval")


def as_frames(runs: dict[str, list[tuple]], qrels: list[tuple]) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Run rows (qid, rank, chunk_id, doc_id, score) and label rows (qid, item_id, grade) as frames, the labels at
    both grains (one chunk per document)."""
    frames = {name: pd.DataFrame(rows, columns=["qid", "rank", "chunk_id", "doc_id", "score"])
              for name, rows in runs.items()}
    labels = pd.DataFrame(qrels, columns=["qid", "item_id", "grade"])
    both = pd.concat([labels.assign(grain="document"), labels.assign(grain="chunk")], ignore_index=True)
    return frames, both[["grain", "qid", "item_id", "grade"]]


def toy(seed: int = 0, n: int = 40) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Three chunk runs of depth 10 over n questions (one chunk per document) and qrels at both grains:
    'strong' ranks a relevant document first in most questions, 'weak' rarely, 'base' in between."""
    rng = np.random.default_rng(seed)
    runs = {name: [] for name in ("base", "strong", "weak")}
    qrels = []
    for i in range(n):
        qid = f"q{i:02d}"
        relevant = [f"d{i}-r{j}" for j in range(2)]
        qrels += [(qid, doc, int(rng.integers(1, 4))) for doc in relevant] + [(qid, f"d{i}-n0", 0)]
        for name, chance in (("base", 0.5), ("strong", 0.9), ("weak", 0.2)):
            others = [f"d{i}-n0"] + [f"d{i}-u{j}" for j in range(8)]
            order = list(rng.permutation(others))
            order = relevant + order if rng.random() < chance else order[:3] + relevant + order[3:]
            runs[name] += [(qid, rank + 1, doc, doc, 1.0 / (rank + 1)) for rank, doc in enumerate(order[:10])]
    return as_frames(runs, qrels)


def test_perturbations_do_what_they_say():
    _, qrels = toy()
    rng = np.random.default_rng(0)
    assert drop_labels(qrels, 0.0, rng).equals(qrels)
    assert drop_labels(qrels, 1.0, rng).empty
    assert 0.25 < 1 - len(drop_labels(qrels, 0.3, rng)) / len(qrels) < 0.35
    shifted = shift_grades(qrels, 1.0, rng)
    moved = shifted["grade"].to_numpy() - qrels["grade"].to_numpy()
    low, high = qrels["grade"].min(), qrels["grade"].max()
    at_edge = qrels["grade"].isin([low, high]).to_numpy()
    assert (np.abs(moved[~at_edge]) == 1).all() and shifted["grade"].between(low, high).all()
    assert shift_grades(qrels, 0.0, rng)["grade"].equals(qrels["grade"])


def scifact_like(seed: int = 1, n: int = 40) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """SciFact-like runs: numeric ids, one relevant document (grade 1) per question and nothing else judged, three
    methods sharing most of their unjudged candidates."""
    rng = np.random.default_rng(seed)
    runs: dict[str, list[tuple[str, int, str, str, float]]] = {name: [] for name in ("bm25", "dense", "hybrid")}
    qrels = []
    for i in range(n):
        qid, relevant = str(i + 1), str(1000 + i)
        qrels.append((qid, relevant, 1))
        candidates = [str(5000 + 20 * i + j) for j in range(14)]
        for name in runs:
            order = list(rng.permutation(candidates))[:9]
            order.insert(int(rng.integers(0, 12)), relevant)
            runs[name] += [(qid, rank + 1, doc, doc, 1.0 / (rank + 1)) for rank, doc in enumerate(order[:10])]
    return as_frames(runs, qrels)


BOUNDED = {("recall", 10): "R@10", ("rr", 10): "RR@10", ("hit", 1): "Success@1", ("precision", 5): "P@5"}


@pytest.mark.parametrize("data", [toy, scifact_like], ids=["random", "scifact-like"])
def test_bounds_hold_for_every_labelling_of_the_unjudged_items(data) -> None:
    """Every labelling of the pool's unjudged items (each not relevant or just relevant) gives, by ir_measures, a
    mean between the lower and the upper bound; nDCG is not bounded."""
    ir_measures = pytest.importorskip("ir_measures")
    runs, qrels = data()
    headline = [("ndcg", 10), *BOUNDED]
    survival, bounds = robustness(runs, {m: qrels for m in runs}, "document", headline, None, 0.05, 1, "linear",
                                  seed=0, repetitions=1)
    assert bounds.query("metric == 'ndcg'")[["lower", "upper"]].isna().all(axis=None)
    shown = bounds.dropna(subset=["lower"]).set_index(["metric", "k", "method"])
    assert (shown["lower"] <= shown["reported"] + 1e-12).all() and (shown["reported"] <= shown["upper"] + 1e-12).all()
    assert (shown.xs("recall", level="metric")["lower"] < shown.xs("recall", level="metric")["reported"]).any()
    judged = qrels[qrels["grain"] == "document"][["qid", "item_id", "grade"]]
    evaluated = set(judged.loc[judged["grade"] >= 1, "qid"])
    top = pd.concat([run[run["rank"] <= 10][["qid", "doc_id"]] for run in runs.values()]).drop_duplicates()
    unjudged = top[~pd.MultiIndex.from_frame(top).isin(pd.MultiIndex.from_frame(judged[["qid", "item_id"]]))]
    measures = [ir_measures.parse_measure(name) for name in BOUNDED.values()]
    rng = np.random.default_rng(7)
    reached = {"lower": 0, "upper": 0}
    for share in [0.0, 1.0, *rng.random(20)]:
        turned = unjudged[rng.random(len(unjudged)) < share]
        labelled = pd.concat([judged, turned.rename(columns={"doc_id": "item_id"}).assign(grade=1)])
        frame = labelled.rename(columns={"qid": "query_id", "item_id": "doc_id", "grade": "relevance"})
        for method, run in runs.items():
            scored = run.rename(columns={"qid": "query_id"})[["query_id", "doc_id", "score"]]
            values = pd.DataFrame([(m.measure, m.query_id, m.value) for m in ir_measures.iter_calc(
                measures, frame, scored) if m.query_id in evaluated], columns=["measure", "qid", "value"])
            for (metric, k), name in BOUNDED.items():
                mean = values.loc[values["measure"] == ir_measures.parse_measure(name), "value"].sum() / len(evaluated)
                row = shown.loc[(metric, k, method)]
                assert row["lower"] - 1e-9 <= mean <= row["upper"] + 1e-9, (metric, k, method, share)
                reached["lower"] += abs(mean - row["lower"]) < 1e-9
                reached["upper"] += abs(mean - row["upper"]) < 1e-9
    assert reached["lower"] and reached["upper"]  # the bounds are reached, not just bounds
    page = robustness_page(survival, bounds, "d", "v1")
    ndcg, recall = page.split("### nDCG@10")[1].split("### R@10")
    assert "No bounds" in ndcg and "| lower |" not in ndcg and "| lower | reported | upper |" in recall



def test_bounds_of_metrics_scored_together_at_one_k_equal_each_metric_alone():
    """The bounded metrics sharing a k are scored from one pair of bounding qrels: the bounds are, bit for bit, those
    of each metric bounded in a run of its own."""
    runs, qrels = toy(3)
    headline = [("recall", 10), ("rr", 10), ("precision", 10), ("hit", 1)]
    args = (runs, {m: qrels for m in runs}, "document")
    _, together = robustness(*args, headline, None, 0.05, 1, "linear", seed=0, repetitions=1)
    alone = pd.concat([robustness(*args, [key], None, 0.05, 1, "linear", seed=0, repetitions=1)[1]
                       for key in headline], ignore_index=True)
    assert together[["lower", "upper"]].notna().all(axis=None)
    pd.testing.assert_frame_equal(together, alone, check_exact=True)


def test_an_item_with_repeated_label_rows_counts_once_in_the_unjudged_share():
    """A label row given twice (same grade, which the metrics accept) does not make its item count twice among the
    top k: the unjudged share is that of the labels without the repeat (1/3 before, a merge counting it twice)."""
    run = pd.DataFrame({"qid": ["q1", "q1"], "item_id": ["a", "b"], "rank": [1, 2], "score": [2.0, 1.0]})
    labels = pd.DataFrame({"grain": "chunk", "qid": "q1", "item_id": ["a", "a"], "grade": [1, 1]})
    _, bounds = robustness({"m": run.assign(chunk_id=run["item_id"], doc_id=run["item_id"])}, {"m": labels},
                           "chunk", [("recall", 2)], None, 0.05, 1, "linear", seed=0, repetitions=1)
    assert bounds["unjudged_share"].tolist() == [0.5]


def test_survival_counts_and_determinism():
    """Without noise everything survives; heavy noise breaks the ranking; the same seed gives the same table."""
    runs, qrels = toy()
    args = (runs, {m: qrels for m in runs}, "document", [("ndcg", 10), ("hit", 1)], "base", 0.05, 1, "linear")
    calm, _ = robustness(*args, seed=0, repetitions=3, perturbations=(("drop labels", 0.0),
                                                                      ("shift grades", 0.0)))
    assert (calm["best"] == "strong").all() and (calm["best_survives"] == 1).all()
    assert (calm["tau_min"] == 1).all() and (calm["marks_survive"] == 1).all() and (calm["marks"] >= 1).all()
    rough, bounds = robustness(*args, seed=0, repetitions=5, perturbations=(("drop labels", 0.9),))
    assert rough["tau_min"].min() < 1 and rough["marks_survive"].min() < 1
    again, bounds_again = robustness(*args, seed=0, repetitions=5, perturbations=(("drop labels", 0.9),))
    pd.testing.assert_frame_equal(rough, again)
    page = robustness_page(rough.assign(dataset="toy", qset="v1"), bounds.assign(dataset="toy", qset="v1"), "toy",
                           "v1")
    assert page == robustness_page(again.assign(dataset="toy", qset="v1"),
                                   bounds_again.assign(dataset="toy", qset="v1"), "toy", "v1")
    assert "the winner strong stays first in" in page


def test_without_baseline_the_marks_are_left_out_and_one_method_gives_no_finding():
    runs, qrels = toy()
    survival, bounds = robustness(runs, {m: qrels for m in runs}, "document", [("ndcg", 10)], None, 0.05, 1,
                                  "linear", seed=0, repetitions=2)
    assert survival["marks_survive"].isna().all() and (survival["marks"] == 0).all()
    sentence = headline_findings(survival, bounds)[0]
    assert "marks unchanged" not in sentence and "nan" not in sentence
    alone, alone_bounds = robustness({"base": runs["base"]}, {"base": qrels}, "document", [("ndcg", 10)], "base",
                                     0.05, 1, "linear", seed=0, repetitions=2)
    assert (alone["best_survives"] == 1).all() and headline_findings(alone, alone_bounds) == []


def toy_judgements(runs: dict[str, pd.DataFrame], grade: int | None) -> pd.DataFrame:
    """The LLM judge's pool: base's top 2 of every question (chunk = document in the toy), each graded `grade`
    (None: the judge gives people's grade where they have one, 0 elsewhere — a perfect judge)."""
    _, qrels = toy()
    human = dict(zip(zip(qrels["qid"], qrels["item_id"]), qrels["grade"]))
    pool = runs["base"][runs["base"]["rank"] <= 2]
    judge = [human.get((q, d), 0) if grade is None else grade for q, d in zip(pool["qid"], pool["doc_id"])]
    return pd.DataFrame({"qid": pool["qid"], "kind": "answerable", "chunk_id": pool["chunk_id"],
                         "doc_id": pool["doc_id"], "section": None, "judge": pd.array(judge, dtype="Int64"),
                         "human": pd.NA, "seconds": 0.0})


def test_llm_labels_swapped_in_and_judge_corrected_metrics_match_pytrec_eval():
    """A judge that grades its whole pool 3: the swapped qrels and the human ones scored by pytrec_eval give the
    judge-only and human-only estimates; PPI is ppi_mean of the same values; a perfect judge changes nothing."""
    runs, qrels = toy()
    args = ("document", [("ndcg", 10)], "base", 0.05, 1, "linear", 0)
    survival, corrected = judge_effects(runs, {m: qrels for m in runs}, toy_judgements(runs, 3), *args)
    documents = qrels[qrels["grain"] == "document"]
    human = {q: {d: int(g) for d, g in zip(rows["item_id"], rows["grade"])} for q, rows in documents.groupby("qid")}
    swapped = {q: dict(grades) for q, grades in human.items()}
    pool = runs["base"][runs["base"]["rank"] <= 2]
    for q, d in zip(pool["qid"], pool["doc_id"]):
        swapped[q][d] = 3
    complete = sorted(q for q in human if all(d in human[q] for d in pool.loc[pool["qid"] == q, "doc_id"]))
    assert 0 < len(complete) < len(human)
    for method, run in runs.items():
        scored = {q: {d: float(s) for d, s in zip(rows["doc_id"], rows["score"])} for q, rows in run.groupby("qid")}
        y = pytrec_eval.RelevanceEvaluator(human, {"ndcg_cut.10"}).evaluate(scored)
        y_hat = pytrec_eval.RelevanceEvaluator(swapped, {"ndcg_cut.10"}).evaluate(scored)
        rows = corrected[corrected["method"] == method].set_index("estimator")
        y_in = np.array([y[q]["ndcg_cut_10"] for q in complete])
        fitted = np.array([y_hat[q]["ndcg_cut_10"] for q in complete])
        rest = np.array([y_hat[q]["ndcg_cut_10"] for q in sorted(set(human) - set(complete))])
        assert rows.loc["human", "estimate"] == pytest.approx(y_in.mean(), abs=1e-9)
        assert rows.loc["judge", "estimate"] == pytest.approx(np.mean([v["ndcg_cut_10"] for v in y_hat.values()]),
                                                             abs=1e-9)
        assert tuple(rows.loc["ppi", ["estimate", "ci_low", "ci_high", "weight"]]) == pytest.approx(
            ppi_mean(y_in, fitted, rest), abs=1e-9)
        assert (rows["n_labelled"] == len(complete)).all()
    row = survival.iloc[0]
    assert row["perturbation"] == "LLM labels" and row["repetitions"] == 1 and row["level"] > 0
    perfect, _ = judge_effects(runs, {m: qrels for m in runs}, toy_judgements(runs, None), *args)
    assert perfect.iloc[0]["level"] == 0 and perfect.iloc[0]["tau_min"] == 1 and perfect.iloc[0]["best_survives"] == 1


def test_robustness_page_says_when_the_llm_parts_do_not_apply_and_shows_them_when_they_do():
    runs, qrels = toy()
    args = (runs, {m: qrels for m in runs}, "document", [("ndcg", 10)], "base", 0.05, 1, "linear")
    survival, bounds = robustness(*args, seed=0, repetitions=2)
    page = robustness_page(survival, bounds, "toy", "v1")
    assert "not applicable (no LLM judgements for this version)" in page
    swapped, corrected = judge_effects(runs, {m: qrels for m in runs}, toy_judgements(runs, 3), *args[2:], 0)
    both = pd.concat([survival, swapped], ignore_index=True)
    page = robustness_page(both, bounds, "toy", "v1", corrected)
    assert "not applicable" not in page and "| strong |" in page and "PPI" in page
    assert "With the LLM judge's grades in place of people's on its pool" in headline_findings(both, bounds)[0]


def test_a_judge_that_finds_nothing_relevant_scores_zero_instead_of_failing():
    """Every labelled item graded 0 by the judge: the swapped qrels have no relevant label at all; the judge-only
    estimates are 0, and every metric gets its row (regression: a KeyError in the workflow's LLM test)."""
    runs, qrels = toy()
    documents = qrels[qrels["grain"] == "document"]
    judgements = pd.DataFrame({"qid": documents["qid"], "kind": "answerable", "chunk_id": documents["item_id"],
                               "doc_id": documents["item_id"], "section": None,
                               "judge": pd.array([0] * len(documents), dtype="Int64"), "human": pd.NA,
                               "seconds": 0.0})
    survival, corrected = judge_effects(runs, {m: qrels for m in runs}, judgements, "document",
                                        [("ndcg", 10), ("hit", 1)], "base", 0.05, 1, "linear", 0)
    assert (corrected.loc[corrected["estimator"] == "judge", "estimate"] == 0).all()
    assert len(survival) == 2 and (survival["level"] > 0).all()


def test_verdicts_of_many_tables_at_once_equal_each_table_alone():
    """Batched randomization tests (tables of 30 and 25 questions, with and without the baseline) give the same
    rankings and marks as one table at a time."""
    rng = np.random.default_rng(3)
    tables = [pd.DataFrame(rng.random((n, 3)) + np.array(shift), columns=["base", "strong", "weak"])
              for n, shift in ((30, (0, 0.3, -0.2)), (25, (0, 0.05, 0)), (30, (0, -0.4, 0.01)))]
    tables.append(tables[1][["strong", "weak"]])
    alone = [verdicts([table], "base", 0.05, 0)[0] for table in tables]
    assert verdicts(tables, "base", 0.05, 0) == alone
    assert alone[0] == (["strong", "base", "weak"], {"strong": 1, "weak": -1})
    assert alone[3][1] == {}


def test_kendall_tau_equals_scipy_for_every_small_permutation_and_random_large_ones():
    """The job's own tau (no scipy.stats import) is scipy.stats.kendalltau's number, bit for bit."""
    import itertools

    from scipy import stats as sps

    rng = np.random.default_rng(0)
    permutations = [list(p) for n in range(2, 7) for p in itertools.permutations(range(n))]
    permutations += [rng.permutation(int(n)).tolist() for n in rng.integers(7, 40, size=50)]
    for positions in permutations:
        assert kendall_tau(positions) == float(sps.kendalltau(range(len(positions)), positions).statistic)
