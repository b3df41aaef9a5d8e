"""Tests of rankbench.evaluation.metrics: differential against pytrec_eval / ir_measures, plus hand cases."""

from __future__ import annotations

import math
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation.metrics import (
    ERR_MAX_GRADE,
    GRADE_LABELS,
    METRICS_AT_K,
    METRICS_FULL,
    grade_labels,
    grades_by_rank,
    per_query_metrics,
    questions_without_relevant,
)

pytrec_eval = pytest.importorskip("pytrec_eval")
ir_measures = pytest.importorskip("ir_measures")

KS = (1, 3, 5, 10, 20, 100)
SEEDS = (0, 1, 2, 3)
N_QUERIES = 600  # per seed: 2,400 random questions in all
TOL = 1e-9
# Our name -> pytrec_eval's measure family (rr, dcg, judged, rcap_recall are checked apart).
TREC_AT_K = {"precision": "P", "recall": "recall", "ndcg": "ndcg_cut", "ap": "map_cut", "hit": "success"}


# --------------------------------------------------------------------------- random cases


# Grades trec_eval takes and we must too: negative (non-relevant, like 0) and above 3.
WIDE_GRADES = (-2, -1, 0, 1, 2, 3, 4)


def random_case(seed: int, n_queries: int = N_QUERIES,
                grade_values: tuple[int, ...] = (0, 1, 2, 3)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random graded qrels and a run with many tied scores, questions missing from the run,
    questions without labels or without relevant labels, and runs shorter than most k.

    Ids are not zero-padded ("d7" > "d12") so the id tie-break really is a string order.
    Ranks follow trec_eval's rule (score desc, then item_id desc); row order is shuffled.
    """
    rng = np.random.default_rng(seed)
    run_rows, qrel_rows = [], []
    for i in range(n_queries):
        qid = f"q{i}"
        pool = [f"d{j}" for j in rng.choice(400, 160, replace=False)]
        n_labels = int(rng.integers(0, 16))
        labelled = pool[:n_labels]
        grades = (rng.choice(4, n_labels, p=[0.4, 0.25, 0.2, 0.15]) if grade_values == (0, 1, 2, 3)
                  else rng.choice(np.array(grade_values), n_labels))
        if rng.random() < 0.1:
            grades[:] = 0  # labels, none relevant
        qrel_rows += [(qid, item, int(g)) for item, g in zip(labelled, grades)]
        if rng.random() < 0.1:
            continue  # question missing from the run
        depth = int(rng.choice([rng.integers(1, 12), rng.integers(1, 130)]))
        # Labelled items are likelier to be retrieved, so relevant ones land at all ranks.
        weights = np.where(np.arange(len(pool)) < n_labels, 6.0, 1.0)
        items = rng.choice(pool, min(depth, len(pool)), replace=False, p=weights / weights.sum())
        scores = rng.integers(0, 8, len(items)) / 2.0 if rng.random() < 0.7 else rng.normal(size=len(items))
        run_rows += [(qid, str(item), float(s)) for item, s in zip(items, scores)]
    for qid in ("orphan-a", "orphan-b"):  # in the run, never labelled: ignored by everyone
        run_rows += [(qid, "d1", 1.0), (qid, "d2", 0.5)]
    run = pd.DataFrame(run_rows, columns=["qid", "item_id", "score"])
    run = with_trec_ranks(run).sample(frac=1.0, random_state=seed, ignore_index=True)
    qrels = pd.DataFrame(qrel_rows, columns=["qid", "item_id", "grade"])
    return run, qrels


def with_trec_ranks(run: pd.DataFrame) -> pd.DataFrame:
    """Ranks by trec_eval's rule: score desc, then item_id desc, within each question."""
    ordered = run.sort_values(["qid", "score", "item_id"], ascending=[True, False, False], ignore_index=True)
    return ordered.assign(rank=ordered.groupby("qid").cumcount() + 1)


def trec_run(run: pd.DataFrame, k: int | None = None) -> dict[str, dict[str, float]]:
    """pytrec_eval's run dict (scores, not ranks), optionally cut to each question's top k."""
    if k is not None:
        run = run[run["rank"] <= k]
    out: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run["qid"], run["item_id"], run["score"]):
        out.setdefault(q, {})[d] = float(s)
    return out


def trec_qrels(qrels: pd.DataFrame, gain: str = "linear") -> dict[str, dict[str, int]]:
    """pytrec_eval's qrels dict; exponential maps grade g > 0 to 2^g - 1 (trec_eval's linear gain
    on those values is exactly the exponential-gain nDCG: an independent check of ours); grades below 0 become
    -1 (see reference_grade)."""
    out: dict[str, dict[str, int]] = {}
    for q, d, g in zip(qrels["qid"], qrels["item_id"], qrels["grade"]):
        out.setdefault(q, {})[d] = reference_grade(int(g)) if gain == "linear" or g <= 0 else 2 ** int(g) - 1
    return out


def reference_grade(grade: int) -> int:
    """The grade handed to trec_eval: below -1 it becomes -1. trec_eval indexes arrays by grade, so -2 (its own
    code for "in the pool, unjudged") and below corrupt memory (pytrec_eval segfaults); -1 it reads safely. Every
    negative grade is non-relevant with gain 0 in trec_eval's measures and in ours, so -1 stands for them all."""
    return max(grade, -1)


def as_dict(table: pd.DataFrame) -> dict[tuple[str, str, int], float]:
    """Our long table as {(qid, metric, k): value}."""
    return {(q, m, int(k)): float(v) for q, m, k, v in zip(table["qid"], table["metric"], table["k"], table["value"])}


def reference(run: pd.DataFrame, qrels: pd.DataFrame, threshold: int, gain: str) -> dict[str, dict[str, float]]:
    """pytrec_eval figures per question, with rr@k from recip_rank on the run cut at k and
    dcg@k = ndcg_cut@k x ideal DCG@k, the ideal DCG read from pytrec_eval itself: a run with a
    single item of gain g at rank 1 has ndcg_cut@k = g / idcg@k."""
    cuts = ",".join(map(str, KS))
    measures = {f"{fam}.{cuts}" for fam in TREC_AT_K.values()} | {"Rprec", "recip_rank", "num_rel"}
    trec_q = trec_qrels(qrels, gain)
    ref = pytrec_eval.RelevanceEvaluator(trec_q, measures, relevance_level=threshold).evaluate(trec_run(run))
    for k in KS:
        rr = pytrec_eval.RelevanceEvaluator(trec_q, {"recip_rank"}, relevance_level=threshold)
        for q, v in rr.evaluate(trec_run(run, k)).items():
            ref[q][f"rr_{k}"] = v["recip_rank"]
    probe_run, probe_gain = {}, {}
    for q, labels in trec_q.items():
        item, g = max(labels.items(), key=lambda kv: (kv[1], kv[0]))
        if g > 0:
            probe_run[q], probe_gain[q] = {item: 1.0}, g
    probe = pytrec_eval.RelevanceEvaluator(trec_q, {f"ndcg_cut.{cuts}"}).evaluate(probe_run)
    for q in ref:
        for k in KS:
            ideal = probe_gain[q] / probe[q][f"ndcg_cut_{k}"] if q in probe else 0.0
            ref[q][f"dcg_{k}"] = ref[q][f"ndcg_cut_{k}"] * ideal
    return ref


def naive_rcap(run: pd.DataFrame, qrels: pd.DataFrame, threshold: int) -> dict[tuple[str, int], float]:
    """BEIR R_cap@k written plainly, one question at a time. No reference tool computes it,
    so this loop is its only check (the one metric tested against a hand-written loop)."""
    relevant: dict[str, set[str]] = {}
    for q, d, g in zip(qrels["qid"], qrels["item_id"], qrels["grade"]):
        if g >= threshold:
            relevant.setdefault(q, set()).add(d)
    ranked: dict[str, list[str]] = {}
    for q, d, _ in sorted(zip(run["qid"], run["item_id"], run["rank"]), key=lambda r: (r[0], r[2])):
        ranked.setdefault(q, []).append(d)
    out = {}
    for q, rel in relevant.items():
        for k in KS:
            found = sum(1 for d in ranked.get(q, [])[:k] if d in rel)
            out[(q, k)] = found / min(len(rel), k)
    return out


# --------------------------------------------------------------------------- differential


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("threshold", "gain"), [(1, "linear"), (2, "linear"), (1, "exponential")])
def test_matches_pytrec_eval(seed: int, threshold: int, gain: str) -> None:
    assert_matches_pytrec_eval(*random_case(seed), threshold, gain, minimum=10_000)


@pytest.mark.parametrize("seed", (40, 41))
@pytest.mark.parametrize(("threshold", "gain"), [(1, "linear"), (2, "linear"), (4, "linear"), (1, "exponential"),
                                                 (2, "exponential")])
def test_any_integer_grade_matches_pytrec_eval(seed: int, threshold: int, gain: str) -> None:
    """Grades -2..4, as trec_eval takes them: negative and 0 are not relevant and gain 0; the threshold decides."""
    run, qrels = random_case(seed, 300, WIDE_GRADES)
    assert set(qrels["grade"]) == set(WIDE_GRADES)
    assert_matches_pytrec_eval(run, qrels, threshold, gain, minimum=1_000)


def as_coded(run: pd.DataFrame, qrels: pd.DataFrame, coding: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The same run and labels with their ids coded another way: rows grouped by question (repeated qids coded once
    per stretch), categoricals of their own, or categoricals sharing one vocabulary (the workflow's coding)."""
    if coding == "grouped":
        return run.sort_values(["qid", "rank"], ignore_index=True), qrels
    if coding == "categorical":  # each frame its own categories, in different orders
        return (run.astype({"qid": "category", "item_id": "category"}),
                qrels.iloc[::-1].astype({"qid": "category", "item_id": "category"}))
    from rankbench.evaluation.scoring import dictionary_coded
    coded_run, coded_qrels = dictionary_coded(run.assign(chunk_id=run["item_id"], doc_id=run["item_id"]), qrels)
    return coded_run.assign(item_id=coded_run["chunk_id"]), coded_qrels


@pytest.mark.parametrize("coding", ("grouped", "categorical", "shared"))
def test_coded_ids_match_pytrec_eval(coding: str) -> None:
    """Ids read as codes (categoricals, one vocabulary for run and labels) or hashed once per stretch of a question
    score as pytrec_eval does, and exactly as the same ids given as strings."""
    run, qrels = random_case(7, 300, WIDE_GRADES)
    coded_run, coded_qrels = as_coded(run, qrels, coding)
    assert_matches_pytrec_eval(coded_run, coded_qrels, 1, "linear", minimum=1_000)
    pd.testing.assert_frame_equal(per_query_metrics(coded_run, coded_qrels, KS), per_query_metrics(run, qrels, KS))
    qids, codes = grades_by_rank(coded_run, coded_qrels, 10)
    expected_qids, expected_codes = grades_by_rank(run, qrels, 10)
    pd.testing.assert_series_equal(qids, expected_qids)
    assert np.array_equal(codes, expected_codes)


def assert_matches_pytrec_eval(run: pd.DataFrame, qrels: pd.DataFrame, threshold: int, gain: str,
                               minimum: int) -> None:
    """Every metric pytrec_eval computes, per question, equal to ours to TOL (rcap_recall against a plain loop)."""
    ours = as_dict(per_query_metrics(run, qrels, KS, relevance_threshold=threshold, gain=gain))
    ref = reference(run, qrels, threshold, gain)
    relevant_qids = set(qrels.loc[qrels["grade"] >= threshold, "qid"])
    run_qids = set(run["qid"])
    assert {q for q, _, _ in ours} == relevant_qids
    # pytrec_eval reports labelled questions without relevant labels (all zeros): we leave them out.
    assert {q for q in ref if ref[q]["num_rel"] == 0}.isdisjoint({q for q, _, _ in ours})
    assert relevant_qids - run_qids, "the random case must include labelled questions missing from the run"
    rcap = naive_rcap(run, qrels, threshold)
    checked = 0
    for q in sorted(relevant_qids):
        if q not in run_qids:
            # pytrec_eval omits it; we score 0 on everything (trec_eval -c).
            assert q not in ref
            assert all(v == 0.0 for (qq, _, _), v in ours.items() if qq == q)
            continue
        r = ref[q]
        for k in KS:
            expected = {name: r[f"{fam}_{k}"] for name, fam in TREC_AT_K.items()}
            expected |= {"rr": r[f"rr_{k}"], "dcg": r[f"dcg_{k}"], "rcap_recall": rcap[(q, k)]}
            for name, value in expected.items():
                assert math.isclose(ours[(q, name, k)], value, abs_tol=TOL), (q, name, k, ours[(q, name, k)], value)
                checked += 1
        assert math.isclose(ours[(q, "r_precision", 0)], r["Rprec"], abs_tol=TOL), (q, "Rprec")
    assert checked > minimum


def test_full_depth_rr_matches_recip_rank() -> None:
    run, qrels = random_case(7, 300)
    deep = int(run["rank"].max())
    ours = per_query_metrics(run, qrels, [deep], metrics=["rr"])
    ref = pytrec_eval.RelevanceEvaluator(trec_qrels(qrels), {"recip_rank"}).evaluate(trec_run(run))
    for q, v in zip(ours["qid"], ours["value"]):
        assert math.isclose(v, ref.get(q, {"recip_rank": 0.0})["recip_rank"], abs_tol=TOL), q


def test_exponential_ndcg_matches_ir_measures() -> None:
    run, qrels = random_case(11, 300)
    ks = (1, 5, 10, 20)
    measures = [ir_measures.nDCG(gains={0: 0, 1: 1, 2: 3, 3: 7}) @ k for k in ks]
    ref = {(m.query_id, m.measure.params["cutoff"]): m.value for m in ir_measures.iter_calc(
        measures, to_ir_qrels(qrels), to_ir_run(run))}
    ours = per_query_metrics(run, qrels, ks, gain="exponential", metrics=["ndcg"])
    compared = 0
    for q, k, v in zip(ours["qid"], ours["k"], ours["value"]):
        assert math.isclose(v, ref.get((q, int(k)), 0.0), abs_tol=TOL), (q, k)
        compared += (q, int(k)) in ref
    assert compared > 500


def to_ir_qrels(qrels: pd.DataFrame) -> pd.DataFrame:
    """qrels in ir_measures' column names (grades through reference_grade: ir_measures runs trec_eval)."""
    return pd.DataFrame({"query_id": qrels["qid"], "doc_id": qrels["item_id"],
                         "relevance": qrels["grade"].map(reference_grade)})


def to_ir_run(run: pd.DataFrame) -> pd.DataFrame:
    """run in ir_measures' column names, scored -rank: ir_measures breaks score ties by doc_id
    ascending (not trec_eval's descending), so distinct scores keep our order unambiguous."""
    return pd.DataFrame({"query_id": run["qid"], "doc_id": run["item_id"], "score": -run["rank"].astype(float)})


# Our name -> ir_measures measure (Judged has no pytrec_eval counterpart; the others are a second reference).
IR_MEASURES_AT_K = {"precision": "P", "recall": "R", "ndcg": "nDCG", "ap": "AP", "rr": "RR", "hit": "Success",
                    "judged": "Judged"}


@pytest.mark.parametrize(("seed", "grade_values"), [(20, (0, 1, 2, 3)), (21, (0, 1, 2, 3)), (22, (0, 1, 2, 3)),
                                                    (23, WIDE_GRADES)])
@pytest.mark.parametrize("threshold", (1, 2))
def test_every_shared_metric_matches_ir_measures(seed: int, grade_values: tuple[int, ...], threshold: int) -> None:
    run, qrels = random_case(seed, 500, grade_values)
    ks = (1, 3, 5, 10, 20, 100)
    measures = [ir_measures.parse_measure(_ir_key(name, k, threshold)) for name in IR_MEASURES_AT_K for k in ks]
    measures.append(ir_measures.parse_measure(_ir_key("r_precision", 0, threshold)))
    ref = {(m.query_id, str(m.measure)): m.value
           for m in ir_measures.iter_calc(measures, to_ir_qrels(qrels), to_ir_run(run))}
    ours = as_dict(per_query_metrics(run, qrels, ks, relevance_threshold=threshold))
    run_qids = set(run["qid"])
    compared = 0
    for (q, name, k), value in ours.items():
        if name not in IR_MEASURES_AT_K and name != "r_precision":
            continue
        if q not in run_qids:  # ir_measures omits it; we score 0 (trec_eval -c)
            assert value == 0.0
            continue
        key = _ir_key(name, k, threshold)
        assert math.isclose(value, ref[(q, key)], abs_tol=TOL), (q, name, k, value, ref[(q, key)])
        compared += 1
    assert compared > 10_000


def _ir_key(name: str, k: int, threshold: int) -> str:
    """ir_measures' printed name of our metric at k (e.g. P(rel=2)@5, nDCG@10, Rprec(rel=2))."""
    if name == "r_precision":
        return str(ir_measures.Rprec(rel=threshold))
    measure = getattr(ir_measures, IR_MEASURES_AT_K[name])
    return str((measure if name in ("ndcg", "judged") else measure(rel=threshold)) @ k)


# --------------------------------------------------------------------------- parity metrics (computed on request)


@pytest.mark.parametrize(("seed", "grade_values"), [(60, (0, 1, 2, 3)), (61, (0, 1, 2, 3)), (62, WIDE_GRADES)])
@pytest.mark.parametrize(("threshold", "gain"), [(1, "linear"), (2, "linear"), (1, "exponential")])
def test_bpref_infap_condensed_ndcg_match_pytrec_eval(seed: int, grade_values: tuple[int, ...], threshold: int,
                                                      gain: str) -> None:
    """bpref, infAP (uncut) and condensed nDCG@k against trec_eval's bpref, infAP and ndcg_cut with -J."""
    run, qrels = random_case(seed, 400, grade_values)
    ks = (1, 3, 5, 10, 20, 100)
    ours = as_dict(per_query_metrics(run, qrels, ks, relevance_threshold=threshold, gain=gain,
                                     metrics=["bpref", "infap", "ndcg_condensed"]))
    trec_q = trec_qrels(qrels, gain)
    uncut = pytrec_eval.RelevanceEvaluator(trec_q, {"bpref", "infAP"}, relevance_level=threshold).evaluate(
        trec_run(run))
    condensed = pytrec_eval.RelevanceEvaluator(trec_q, {f"ndcg_cut.{','.join(map(str, ks))}"},
                                               relevance_level=threshold, judged_docs_only_flag=True).evaluate(
        trec_run(run))
    run_qids, checked = set(run["qid"]), 0
    for (q, name, k), value in ours.items():
        if q not in run_qids:  # pytrec_eval omits it; we score 0 (trec_eval -c)
            assert value == 0.0
            continue
        expected = (uncut[q]["bpref" if name == "bpref" else "infAP"] if name in ("bpref", "infap")
                    else condensed.get(q, {}).get(f"ndcg_cut_{k}", 0.0))  # -J drops a question with nothing judged
        assert math.isclose(value, expected, abs_tol=TOL), (q, name, k, value, expected)
        checked += 1
    assert checked > 2_000
    # The cases must exercise what sets these metrics apart: unjudged results between judged ones.
    assert any(ours[(q, "ndcg_condensed", 10)] != v for (q, name, k), v in as_dict(
        per_query_metrics(run, qrels, [10], relevance_threshold=threshold, gain=gain, metrics=["ndcg"])).items())


def gdeval_err(run: pd.DataFrame, qrels: pd.DataFrame, k: int, tmp_path: Path) -> dict[str, float]:
    """ERR@k per question from ir_measures' copy of gdeval.pl (the ERR it reports), printing 12 decimals instead
    of 5. gdeval orders topics numerically, so questions are handed over as numbers."""
    number = {q: i for i, q in enumerate(sorted(set(run["qid"]) | set(qrels["qid"])))}
    script = resources.files("ir_measures").joinpath("bin/gdeval.pl").read_text()
    assert script.count("%.5f") == 2
    (tmp_path / "gdeval.pl").write_text(script.replace("%.5f", "%.12f"))
    (tmp_path / "qrels").write_text("".join(f"{number[q]} 0 {d} {g}\n"
                                            for q, d, g in zip(qrels["qid"], qrels["item_id"], qrels["grade"])))
    (tmp_path / "run").write_text("".join(f"{number[q]} Q0 {d} {r} {s!r} ours\n" for q, d, r, s in
                                          zip(run["qid"], run["item_id"], run["rank"], run["score"])))
    output = subprocess.run(["perl", str(tmp_path / "gdeval.pl"), str(tmp_path / "qrels"), str(tmp_path / "run"),
                             str(k)], check=True, capture_output=True, text=True).stdout
    by_number = {str(i): q for q, i in number.items()}
    return {by_number[topic]: float(err) for _, topic, _, err in
            (line.split(",") for line in output.splitlines()[1:]) if topic != "amean"}


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval.pl needs perl")
@pytest.mark.parametrize(("seed", "grade_values"), [(63, (0, 1, 2, 3)), (64, WIDE_GRADES)])
def test_err_matches_gdeval(seed: int, grade_values: tuple[int, ...], tmp_path: Path) -> None:
    """ERR@k against gdeval.pl, the implementation ir_measures reports as ERR@k."""
    run, qrels = random_case(seed, 300, grade_values)
    ks = (1, 5, 20, 100)
    ours = as_dict(per_query_metrics(run, qrels, ks, metrics=["err"]))
    checked = 0
    for k in ks:
        ref = gdeval_err(run, qrels, k, tmp_path)
        for (q, _, kk), value in ours.items():
            if kk == k and q in ref:
                assert math.isclose(value, ref[q], abs_tol=TOL), (q, k, value, ref[q])
                checked += value > 0
    assert checked > 300


@pytest.mark.parametrize(("seed", "grade_values", "threshold"), [(65, (0, 1, 2, 3), 1), (66, (0, 1, 2, 3), 2),
                                                                 (67, WIDE_GRADES, 1)])
@pytest.mark.parametrize("p", (0.5, 0.8, 0.95))
def test_rbp_and_residual_match_reference_tools(seed: int, grade_values: tuple[int, ...], threshold: int,
                                                p: float) -> None:
    """RBP(p) = (1 - p) sum p^(i-1) rel_i with rel_i read from pytrec_eval's P@i at every i (i P@i - (i-1) P@(i-1)),
    and its residual with the unjudged results read from ir_measures' Judged@i the same way, plus p^depth."""
    run, qrels = random_case(seed, 200, grade_values)
    depth = int(run["rank"].max())
    cuts = range(1, depth + 1)
    precision = pytrec_eval.RelevanceEvaluator(trec_qrels(qrels), {f"P.{','.join(map(str, cuts))}"},
                                               relevance_level=threshold).evaluate(trec_run(run))
    judged = {(m.query_id, m.measure.params["cutoff"]): m.value for m in ir_measures.iter_calc(
        [ir_measures.Judged @ i for i in cuts], to_ir_qrels(qrels), to_ir_run(run))}
    lengths = run.groupby("qid")["rank"].size().to_dict()
    ours = as_dict(per_query_metrics(run, qrels, [1], relevance_threshold=threshold, rbp_p=p,
                                     metrics=["rbp", "rbp_residual"]))
    checked = 0
    for (q, name, k), value in ours.items():
        assert k == 0
        n = lengths.get(q, 0)
        if name == "rbp":
            rel = [i * precision[q][f"P_{i}"] - (i - 1) * precision[q][f"P_{i - 1}"] if i > 1
                   else precision[q]["P_1"] for i in range(1, n + 1)]
            expected = (1 - p) * sum(r * p ** (i - 1) for i, r in enumerate(rel, 1))
        else:
            seen = [i * judged[(q, i)] for i in range(1, n + 1)]
            unjudged = [1 - (s - (seen[i - 2] if i > 1 else 0.0)) for i, s in enumerate(seen, 1)]
            expected = (1 - p) * sum(u * p ** (i - 1) for i, u in enumerate(unjudged, 1)) + p ** n
        assert math.isclose(value, expected, abs_tol=TOL), (q, name, value, expected)
        checked += 1
    assert checked > 300


def test_parity_metrics_hand_case_and_errors() -> None:
    """One question by hand; ERR refuses grades gdeval refuses; RBP's p must lie in (0, 1); the defaults leave the
    parity metrics out."""
    run = frame_run([("q", "a", 1, 3.0), ("q", "x", 2, 2.0), ("q", "b", 3, 1.0)])
    qrels = frame_qrels([("q", "a", 1), ("q", "b", 0), ("q", "c", 2)])
    got = values(per_query_metrics(run, qrels, [2], rbp_p=0.5,
                                   metrics=["bpref", "infap", "rbp", "rbp_residual", "err"]), "q")
    assert got[("bpref", 0)] == pytest.approx(1 / 2)  # a above every non-relevant; c not retrieved
    assert got[("rbp", 0)] == pytest.approx(0.5)
    assert got[("rbp_residual", 0)] == pytest.approx(0.5 * 0.5 + 0.5 ** 3)  # x at rank 2, then beyond rank 3
    assert got[("err", 2)] == pytest.approx(1 / 2 ** ERR_MAX_GRADE)
    default = per_query_metrics(run, qrels, [2])
    assert not {"bpref", "infap", "rbp", "rbp_residual", "err", "ndcg_condensed"} & set(default["metric"])
    with pytest.raises(ValueError, match=r"ERR takes grades up to 4.*question 'q', item 'c' has grade 5"):
        per_query_metrics(run, frame_qrels([("q", "a", 1), ("q", "c", 5)]), [2], metrics=["err"])
    for bad in (0, 1, 1.5, True):
        with pytest.raises(ValueError, match="rbp_p"):
            per_query_metrics(run, qrels, [2], metrics=["rbp"], rbp_p=bad)


def ranked_lists(run: pd.DataFrame) -> dict[str, list[str]]:
    """Each question's items in rank order, built plainly."""
    ranked: dict[str, list[str]] = {}
    for q, d, _ in sorted(zip(run["qid"], run["item_id"], run["rank"]), key=lambda r: (r[0], r[2])):
        ranked.setdefault(q, []).append(d)
    return ranked


@pytest.mark.parametrize(("seed", "grade_values"), [(s, (0, 1, 2, 3)) for s in SEEDS] + [(50, WIDE_GRADES)])
def test_new_metrics_match_a_plain_loop(seed: int, grade_values: tuple[int, ...]) -> None:
    """mean_grade@k, grades by rank and the pollution metrics: no reference tool computes them (trec_eval,
    pytrec_eval, ir-measures, ranx have none), so each is checked against a loop written one question at a time.
    Negative grades count 0 in mean_grade, like unjudged results; grades by rank keep every grade apart."""
    run, qrels = random_case(seed, N_QUERIES, grade_values)
    grade = {(q, d): int(g) for q, d, g in zip(qrels["qid"], qrels["item_id"], qrels["grade"])}
    ranked = ranked_lists(run)
    table = as_dict(per_query_metrics(run, qrels, KS, metrics=["mean_grade"]))
    qids, codes = grades_by_rank(run, qrels, 12)
    labels = grade_labels(qrels)
    assert labels == (GRADE_LABELS if grade_values == (0, 1, 2, 3) else
                      ("-2", "-1", "0", "1", "2", "3", "4", "unjudged", "none"))
    assert list(qids) == sorted({q for q, _, _ in table})
    # Documents of items: three items per document, so rankings repeat documents.
    doc_of = {d: f"D{int(d[1:]) // 3}" for d in set(run["item_id"])}
    doc_run = run.assign(doc_id=run["item_id"].map(doc_of))
    polluted = as_dict(per_query_metrics(doc_run, qrels, KS, metrics=["distinct_docs", "top_doc_share"]))
    checked = 0
    for row, q in enumerate(qids):
        items = ranked.get(q, [])
        for k in KS:
            top = items[:k]
            shown = [max(grade.get((q, d), 0), 0) for d in top]
            assert math.isclose(table[(q, "mean_grade", k)], sum(shown) / len(top) if top else 0.0, abs_tol=TOL)
            docs = [doc_of[d] for d in top]
            assert polluted[(q, "distinct_docs", k)] == len(set(docs))
            top_share = max(docs.count(x) for x in set(docs)) / len(docs) if docs else 0.0
            assert math.isclose(polluted[(q, "top_doc_share", k)], top_share, abs_tol=TOL)
            checked += 3
        for position in range(12):
            if position >= len(items):
                expected = "none"
            else:
                g = grade.get((q, items[position]))
                expected = "unjudged" if g is None else str(g)
            assert labels[codes[row, position]] == expected
    assert checked > 5_000


# --------------------------------------------------------------------------- hand cases


def frame_run(rows: list[tuple[str, str, int, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["qid", "item_id", "rank", "score"])


def frame_qrels(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["qid", "item_id", "grade"])


def values(table: pd.DataFrame, qid: str) -> dict[tuple[str, int], float]:
    sub = table[table["qid"] == qid]
    return {(m, int(k)): float(v) for m, k, v in zip(sub["metric"], sub["k"], sub["value"])}


RUN = frame_run([("a", "x", 1, 3.0), ("a", "y", 2, 2.0), ("b", "x", 1, 1.0), ("c", "z", 1, 1.0)])
QRELS = frame_qrels([
    ("a", "y", 2), ("a", "w", 3), ("a", "x", 0),  # a: 2 relevant, retrieved x (judged 0) then y
    ("b", "x", 0),  # b: labelled, nothing relevant -> excluded
    ("m", "x", 1),  # m: relevant label, not in the run -> all 0
])


def test_hand_case_short_run_and_conventions() -> None:
    table = per_query_metrics(RUN, QRELS, [1, 2, 10])
    a = values(table, "a")
    assert a[("precision", 10)] == pytest.approx(1 / 10)  # divides by k even with 2 retrieved
    assert a[("precision", 2)] == pytest.approx(1 / 2)
    assert a[("recall", 10)] == pytest.approx(1 / 2)
    assert a[("rcap_recall", 1)] == 0.0 and a[("rcap_recall", 2)] == pytest.approx(1 / 2)
    assert a[("rr", 1)] == 0.0 and a[("rr", 2)] == pytest.approx(1 / 2)  # first relevant below k -> 0
    assert a[("hit", 1)] == 0.0 and a[("hit", 2)] == 1.0
    assert a[("ap", 10)] == pytest.approx((1 / 2) / 2)
    assert a[("dcg", 2)] == pytest.approx(2 / math.log2(3))
    assert a[("ndcg", 2)] == pytest.approx((2 / math.log2(3)) / (3 + 2 / math.log2(3)))
    assert a[("r_precision", 0)] == pytest.approx(1 / 2)
    assert a[("judged", 10)] == 1.0  # both retrieved items are labelled: 2 / min(10, 2)
    m = values(table, "m")
    assert m and all(v == 0.0 for v in m.values())  # labelled question missing from the run
    assert set(table["qid"]) == {"a", "m"}  # b (no relevant label) and c (no label) are excluded
    assert questions_without_relevant(QRELS, ["a", "b", "c", "m", "b"]) == ["b", "c"]
    assert questions_without_relevant(QRELS, ["a", "m"], relevance_threshold=3) == ["m"]


def test_output_schema_and_order() -> None:
    table = per_query_metrics(RUN.sample(frac=1.0, random_state=1), QRELS, [10, 1])
    assert list(table.columns) == ["qid", "metric", "k"] + ["value"]
    assert table["k"].dtype == np.int64 and table["value"].dtype == np.float64
    assert pd.api.types.is_string_dtype(table["qid"]) and pd.api.types.is_string_dtype(table["metric"])
    assert table.equals(table.sort_values(["qid", "metric", "k"], ignore_index=True))
    per_question = len(METRICS_AT_K) * 2 + len(METRICS_FULL)
    assert len(table) == 2 * per_question
    assert (table.loc[table["metric"] == "r_precision", "k"] == 0).all()
    assert set(table["metric"]) == set(METRICS_AT_K + METRICS_FULL)
    assert table.equals(per_query_metrics(RUN, QRELS, [1, 10]))  # row order and k order irrelevant


def test_threshold_and_ndcg_uses_every_positive_grade() -> None:
    run = frame_run([("q", "g1", 1, 2.0), ("q", "g3", 2, 1.0)])
    qrels = frame_qrels([("q", "g1", 1), ("q", "g3", 3)])
    strict = values(per_query_metrics(run, qrels, [1, 2], relevance_threshold=2), "q")
    assert strict[("precision", 1)] == 0.0 and strict[("rr", 2)] == pytest.approx(1 / 2)
    # trec_eval's ndcg_cut ignores relevance_level: the grade-1 item still has gain 1.
    assert strict[("dcg", 1)] == 1.0
    assert strict[("ndcg", 2)] == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    expo = values(per_query_metrics(run, qrels, [2], gain="exponential"), "q")
    assert expo[("dcg", 2)] == pytest.approx(1 + 7 / math.log2(3))


def test_rank_gaps_are_closed_up_and_metrics_subset() -> None:
    run = frame_run([("q", "a", 7, 0.1), ("q", "b", 3, 0.5), ("q", "c", 1, 0.9)])
    qrels = frame_qrels([("q", "a", 1)])
    table = per_query_metrics(run, qrels, [3], metrics=["rr", "r_precision"])
    assert list(table["metric"]) == ["r_precision", "rr"]
    assert values(table, "q")[("rr", 3)] == pytest.approx(1 / 3)  # third in rank order, as trec_eval


def test_judged_divides_by_retrieved_when_shorter_than_k() -> None:
    run = frame_run([("q", "a", 1, 2.0), ("q", "u", 2, 1.0)])
    qrels = frame_qrels([("q", "a", 1)])
    v = values(per_query_metrics(run, qrels, [1, 5], metrics=["judged"]), "q")
    assert v[("judged", 1)] == 1.0 and v[("judged", 5)] == pytest.approx(1 / 2)  # 1 / min(5, 2)


def test_exact_duplicate_labels_are_accepted() -> None:
    qrels = pd.concat([QRELS, QRELS.iloc[:2]], ignore_index=True)
    assert per_query_metrics(RUN, qrels, [1, 10]).equals(per_query_metrics(RUN, QRELS, [1, 10]))


@pytest.mark.parametrize("long_question", (False, True))
@pytest.mark.parametrize("coding", ("strings", "categorical"))
def test_item_listed_twice_deep_in_a_run_is_named(long_question: bool, coding: str) -> None:
    """A repeated (question, item) anywhere in a shuffled run raises, naming it; with one very long question (the
    hashed check) as with questions of similar length (the sorted matrix)."""
    run, qrels = random_case(3, 60)
    if long_question:
        run = pd.concat([run, frame_run([("long", f"x{i}", i + 1, 1.0) for i in range(20_000)])], ignore_index=True)
    row = run[run["qid"] == "q30"].iloc[-1]
    repeat = row.to_frame().T.astype(run.dtypes.to_dict()).assign(rank=row["rank"] + 1)
    run = pd.concat([run, repeat], ignore_index=True).sample(frac=1.0, random_state=1, ignore_index=True)
    if coding == "categorical":
        run = run.astype({"qid": "category", "item_id": "category"})
    with pytest.raises(ValueError, match=rf"twice: question 'q30', item '{row['item_id']}'"):
        per_query_metrics(run, qrels, KS)
    per_query_metrics(run.drop(index=int(np.flatnonzero((run["qid"] == "q30") & (run["rank"] == row["rank"] + 1))[0])),
                      qrels, KS)  # the run without the repeat is accepted


def test_empty_inputs() -> None:
    empty_run = frame_run([])
    assert per_query_metrics(empty_run, frame_qrels([]), [1]).empty
    only_missing = per_query_metrics(empty_run, QRELS, [5])
    assert set(only_missing["qid"]) == {"a", "m"} and (only_missing["value"] == 0).all()


@pytest.mark.parametrize(("run", "qrels", "pattern"), [
    (frame_run([("a", "x", 1, 1.0), ("a", "x", 2, 0.5)]), QRELS, r"twice.*'a'.*'x'"),
    (frame_run([("a", "x", 1, 1.0), ("a", "y", 1, 0.5)]), QRELS, r"rank 1 twice.*'a'.*'y'"),
    (frame_run([("a", "x", 1, float("nan"))]), QRELS, r"NaN.*'a'.*'x'"),
    (frame_run([("a", "x", 0, 1.0)]), QRELS, r"rank.*'a'.*'x'"),
    (frame_run([("a", "x", 1.5, 1.0)]), QRELS, r"integer.*'a'.*'x'"),
    (RUN, frame_qrels([("a", "y", 2), ("a", "y", 1)]), r"conflicting.*'a'.*'y'"),
    (RUN, frame_qrels([("a", "y", 2**31)]), r"2147483646.*'a'.*'y'"),
    (RUN, frame_qrels([("a", "y", -(2**31))]), r"2147483646.*'a'.*'y'"),
    (RUN, pd.DataFrame({"qid": ["a"], "item_id": ["y"], "grade": [1.5]}), r"integer.*'a'.*'y'"),
    (RUN, pd.DataFrame({"qid": ["a"], "item_id": ["y"], "grade": ["high"]}), r"integer.*'a'.*'y'"),
])
def test_validation_errors_name_question_and_item(run: pd.DataFrame, qrels: pd.DataFrame, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        per_query_metrics(run, qrels, [1])


@pytest.mark.parametrize("ks", [[0], [-1], [2.5], [True], ["5"]])
def test_bad_ks_raise(ks: list) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        per_query_metrics(RUN, QRELS, ks)


def test_bad_options_raise() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        per_query_metrics(RUN, QRELS, [1], metrics=["mrr"])
    with pytest.raises(ValueError, match="gain"):
        per_query_metrics(RUN, QRELS, [1], gain="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="overflows above grade 1023"):
        per_query_metrics(RUN, frame_qrels([("a", "y", 1024)]), [1], gain="exponential")
    assert not per_query_metrics(RUN, frame_qrels([("a", "y", 1024)]), [1]).empty  # linear gain: fine
    with pytest.raises(ValueError, match="relevance_threshold"):
        per_query_metrics(RUN, QRELS, [1], relevance_threshold=0)
    with pytest.raises(ValueError, match="column"):
        per_query_metrics(RUN.drop(columns="score"), QRELS, [1])
    assert not per_query_metrics(RUN, QRELS, [], metrics=["r_precision"]).empty
    with pytest.raises(ValueError, match="cutoff"):
        per_query_metrics(RUN, QRELS, [], metrics=["ndcg"])
    with pytest.raises(ValueError, match=r"lacks column.*doc_id"):
        per_query_metrics(RUN, QRELS, [1], metrics=["distinct_docs"])
    with pytest.raises(ValueError, match=r"missing doc_id.*'a'"):
        per_query_metrics(RUN.assign(doc_id=None), QRELS, [1], metrics=["top_doc_share"])
    assert not set(per_query_metrics(RUN, QRELS, [1])["metric"]) & {"distinct_docs", "top_doc_share"}
