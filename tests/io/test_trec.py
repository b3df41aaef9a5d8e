"""TREC import/export: trec_eval's ordering on import, our order reproduced by trec_eval on export, clear errors."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from rankbench.errors import InputError
from rankbench.evaluation.metrics import per_query_metrics
from rankbench.io.trec import (
    read_parquet_run,
    read_qrels,
    read_run,
    read_trec_qrels,
    read_trec_run,
    trec_run_text,
    write_trec_run,
)

MEASURES = {"P_5", "ndcg_cut_10", "map_cut_20", "recall_20", "recip_rank"}
OURS = {"P_5": ("precision", 5), "ndcg_cut_10": ("ndcg", 10), "map_cut_20": ("ap", 20), "recall_20": ("recall", 20)}


def tied_run(seed: int, n_queries: int = 80) -> pd.DataFrame:
    """qid, doc_id, score with many tied scores (lines in random order)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for d in rng.choice(60, int(rng.integers(1, 30)), replace=False):
            rows.append((f"q{q}", f"d{d}", float(rng.integers(0, 4))))
    return pd.DataFrame(rows, columns=["qid", "doc_id", "score"]).sample(frac=1.0, random_state=seed)


def random_qrels(seed: int, n_queries: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(seed + 100)
    rows = [(f"q{q}", f"d{d}", int(rng.integers(0, 4))) for q in range(n_queries)
            for d in rng.choice(60, 10, replace=False)]
    return pd.DataFrame(rows, columns=["qid", "item_id", "grade"])


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def pytrec_means(qrels_path: Path, run_path: Path) -> dict[str, dict[str, float]]:
    with open(qrels_path) as q, open(run_path) as r:
        evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), MEASURES)
        return evaluator.evaluate(pytrec_eval.parse_run(r))


def ours_by_measure(run: pd.DataFrame, qrels: pd.DataFrame) -> dict[tuple[str, str], float]:
    table = per_query_metrics(run.rename(columns={"doc_id": "item_id"})[["qid", "item_id", "rank", "score"]], qrels,
                              [5, 10, 20, 1000])
    values = {(q, m, int(k)): v for q, m, k, v in zip(table["qid"], table["metric"], table["k"], table["value"])}
    out = {(q, measure): values[(q, *key)] for (q, _, _) in values for measure, key in OURS.items()}
    out |= {(q, "recip_rank"): values[(q, "rr", 1000)] for (q, _, _) in values}
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_imported_run_is_scored_as_trec_eval_scores_it(tmp_path: Path, seed: int) -> None:
    run, qrels = tied_run(seed), random_qrels(seed)
    run_path = write_lines(tmp_path / "run.txt", [f"{q} Q0 {d} 1 {s} tag" for q, d, s in run.itertuples(index=False)])
    qrels_path = write_lines(tmp_path / "qrels.txt", [f"{q} 0 {d} {g}" for q, d, g in qrels.itertuples(index=False)])
    imported = read_trec_run(run_path)
    assert imported.groupby("qid")["rank"].apply(lambda r: list(r) == list(range(1, len(r) + 1))).all()
    ref = pytrec_means(qrels_path, run_path)
    ours = ours_by_measure(imported, read_trec_qrels(qrels_path))
    compared = 0
    for (q, measure), value in ours.items():
        if q in ref:
            assert math.isclose(value, ref[q][measure], abs_tol=1e-9), (q, measure)
            compared += 1
    assert compared > 200


def test_exported_run_makes_trec_eval_reproduce_our_order(tmp_path: Path) -> None:
    """Our ranks contradict the scores (a reranked run keeps first-stage scores, ties everywhere); the
    exported file must still be scored in our rank order."""
    run, qrels = tied_run(3), random_qrels(3)
    rng = np.random.default_rng(3)
    run = run.assign(rank=run.groupby("qid").cumcount() + 1, chunk_id=run["doc_id"])
    run = run.assign(score=rng.integers(0, 2, len(run)).astype(float))  # scores unrelated to the ranks
    out = tmp_path / "runs" / "m.trec"
    write_trec_run(run, out, tag="m")
    qrels_path = write_lines(tmp_path / "qrels.txt", [f"{q} 0 {d} {g}" for q, d, g in qrels.itertuples(index=False)])
    ref = pytrec_means(qrels_path, out)
    ours = ours_by_measure(run, qrels)
    for (q, measure), value in ours.items():
        if q in ref:
            assert math.isclose(value, ref[q][measure], abs_tol=1e-9), (q, measure)
    reread = read_trec_run(out).set_index(["qid", "doc_id"])["rank"]
    assert (reread.loc[list(zip(run["qid"], run["doc_id"]))].to_numpy() == run["rank"].to_numpy()).all()
    assert out.read_text().splitlines()[0].endswith(" m")


RUN_ERRORS = {
    "field count": (["q1 Q0 d1 1 2.0"], ["line 1", "5 fields, expected 6"]),
    "NaN score": (["q1 Q0 d1 1 2.0 t", "q1 Q0 d2 2 nan t"], ["line 2", "question 'q1'", "id 'd2'", "not a finite"]),
    "text score": (["q1 Q0 d1 1 high t"], ["line 1", "question 'q1'", "id 'd1'", "not a finite"]),
    "duplicate id": (["q1 Q0 d1 1 2.0 t", "q2 Q0 d1 1 2.0 t", "q1 Q0 d1 2 1.0 t"],
                     ["lines 1 and 3", "question 'q1'", "id 'd1' twice"]),
}
QRELS_ERRORS = {
    "conflicting grades": (["q1 0 d1 1", "q1 0 d2 0", "q1 0 d1 2"], ["lines 1 and 3", "'q1'", "'d1'", "1 and 2"]),
    "fractional grade": (["q1 0 d1 1", "q1 0 d2 2.5"], ["line 2", "'q1'", "'d2'", "grade '2.5' is not an integer"]),
    "text grade": (["q1 0 d1 yes"], ["line 1", "not an integer"]),
    "NaN grade": (["q1 0 d1 nan"], ["line 1", "not an integer"]),
    "huge grade": (["q1 0 d1 99999999999"], ["line 1", "not an integer (of at most 2,147,483,646"]),
    "field count": (["q1 d1 1"], ["line 1", "3 fields, expected 4"]),
}


CASES = {f"run: {name}": (read_run, *case) for name, case in RUN_ERRORS.items()} | {
    f"qrels: {name}": (read_qrels, *case) for name, case in QRELS_ERRORS.items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_trec_files(tmp_path: Path, case: str) -> None:
    reader, lines, fragments = CASES[case]
    path = write_lines(tmp_path / "bad.txt", lines)
    with pytest.raises(InputError) as error:
        reader(path)
    for fragment in [str(path)] + fragments:
        assert fragment in str(error.value), (fragment, str(error.value))


def test_any_integer_grade_is_read_as_trec_eval_reads_it(tmp_path: Path) -> None:
    """Negative grades (e.g. -2 for spam) and grades above 3 are grades: 0 and below are simply not relevant."""
    path = write_lines(tmp_path / "qrels.txt", ["q1 0 d1 -2", "q1 0 d2 4", "q1 0 d3 -1", "q1 0 d4 0"])
    assert read_qrels(path)["grade"].tolist() == [-2, 4, -1, 0]


def test_exact_repeats_in_qrels_are_kept_once(tmp_path: Path) -> None:
    qrels = read_trec_qrels(write_lines(tmp_path / "q.txt", ["q1 0 d1 2", "q1 0 d1 2", "q2 0 d1 0"]))
    assert qrels.to_dict("list") == {"qid": ["q1", "q2"], "item_id": ["d1", "d1"], "grade": [2, 0]}


def test_parquet_runs_and_qrels(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pd.DataFrame({"qid": ["a", "a", "a"], "doc_id": ["x", "y", "z"], "score": [1.0, 2.0, 2.0]}).to_parquet(path)
    run = read_parquet_run(path)  # no rank column: trec_eval's rule (score desc, id desc)
    assert run["doc_id"].tolist() == ["z", "y", "x"] and run["chunk_id"].tolist() == ["z", "y", "x"]
    ranked = tmp_path / "ranked.parquet"
    pd.DataFrame({"qid": ["a", "a"], "chunk_id": ["x#1", "x#2"], "doc_id": ["x", "x"], "score": [0.0, 5.0],
                  "rank": [1, 2]}).to_parquet(ranked)
    assert read_run(ranked)["chunk_id"].tolist() == ["x#1", "x#2"]  # a rank column is the order
    bad = tmp_path / "bad.parquet"
    pd.DataFrame({"qid": ["a", "a"], "doc_id": ["x", "x"], "score": [1.0, 0.5]}).to_parquet(bad)
    with pytest.raises(InputError, match=r"rows 1 and 2.*'a'.*'x' twice"):
        read_run(bad)
    nan = tmp_path / "nan.parquet"
    pd.DataFrame({"qid": ["a"], "doc_id": ["x"], "score": [float("nan")]}).to_parquet(nan)
    with pytest.raises(InputError, match=r"row 1 \(question 'a', id 'x'\).*finite"):
        read_run(nan)
    qrels = tmp_path / "qrels.parquet"
    pd.DataFrame({"grain": ["chunk", "document", "document"], "qid": ["a", "a", "a"],
                  "item_id": ["x#1", "x", "y"], "grade": [3, 3, 2.5]}).to_parquet(qrels)
    assert read_qrels(qrels, "chunk").to_dict("list") == {"qid": ["a"], "item_id": ["x#1"], "grade": [3]}
    with pytest.raises(InputError, match=r"row 3 .*'y'.*not an integer"):
        read_qrels(qrels, "document")
    with pytest.raises(InputError, match=r"holds no judgement at passage grain"):
        read_qrels(qrels, "passage")


def test_exported_scores_are_the_runs_own_unless_trec_eval_would_reorder_them(tmp_path: Path) -> None:
    """trec_eval reads 32-bit scores: 1 + 1e-12 and 1 tie there and docno desc would put b first. The first score is
    written exactly; b and c (a real tie in the wrong docno order) go just below in float32; q2's scores unchanged."""
    run = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2", "q2"], "rank": [1, 2, 3, 1, 2],
                        "chunk_id": ["a", "b", "c", "y", "x"], "score": [1 + 1e-12, 1.0, 1.0, 0.123456789123, -2.5]})
    path = tmp_path / "run.trec"
    write_trec_run(run, path, tag="m")
    scores = [float(line.split()[4]) for line in path.read_text().splitlines()]
    assert scores[0] == 1 + 1e-12 and scores[3:] == [0.123456789123, -2.5]
    singles = np.float32(scores[:3])
    assert singles[0] > singles[1] > singles[2] and 1.0 - scores[1] < 1e-7
    qrels = write_lines(tmp_path / "qrels", ["q1 0 a 1", "q1 0 b 0", "q1 0 c 1"])
    with open(qrels) as q, open(path) as r:
        values = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), {"P_1", "recip_rank", "map"}).evaluate(
            pytrec_eval.parse_run(r))
    assert values["q1"]["P_1"] == 1.0 and values["q1"]["map"] == pytest.approx((1 + 2 / 3) / 2)


@pytest.mark.parametrize(("column", "bad"), [("qid", "q 2"), ("chunk_id", "c\t1"), ("chunk_id", "c\u00a01")])
def test_trec_run_text_refuses_an_id_with_whitespace_naming_it(column: str, bad: str) -> None:
    """Any whitespace Python's regex knows (a no-break space too) would split a TREC line: the first such id is
    named; a clean run gives one `qid Q0 id rank score tag` line per result."""
    run = pd.DataFrame({"qid": ["q1", "q1", "q2"], "rank": [1, 2, 1], "chunk_id": ["c1", "c2", "c3"],
                        "doc_id": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
    assert trec_run_text(run, "t") == "q1 Q0 c1 1 3.0 t\nq1 Q0 c2 2 2.0 t\nq2 Q0 c3 1 1.0 t\n"  # the run's scores
    run.loc[2, column] = bad
    with pytest.raises(InputError, match=re.escape(f"{column} {bad!r}: contains whitespace")):
        trec_run_text(run, "t")


@pytest.mark.parametrize("score", [np.nan, np.inf])
def test_a_score_that_is_no_number_is_named_plainly_not_as_a_numpy_repr(tmp_path: Path, score: float) -> None:
    """Before: `score np.float64(nan) is not a finite number` (numpy 2's repr of a value taken from a frame)."""
    frame = pd.DataFrame({"qid": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [1.0, score]})
    path = tmp_path / "run.parquet"
    frame.to_parquet(path)
    says = rf"\(question 'q1', id 'd2'\): score {score} is not a finite number\."
    with pytest.raises(InputError, match=says) as error:
        read_run(path)
    assert "np." not in str(error.value)


def test_every_numpy_scalar_repr_in_a_message_reads_as_its_value() -> None:
    values = [np.float64("nan"), np.int64(3), np.str_("a b"), np.True_, np.float32(-1.5), [np.float64(2.5)]]
    error = InputError("f.csv", f"row {np.int64(7)!r}", "has " + ", ".join(map(repr, values)), f"Use {np.uint8(1)!r}.")
    assert str(error) == "f.csv, row 7: has nan, 3, 'a b', True, -1.5, [2.5]. Use 1."


def test_a_grade_that_is_no_integer_is_named_plainly_by_the_metrics() -> None:
    run = pd.DataFrame({"qid": ["q1"], "item_id": ["d1"], "rank": [1], "score": [1.0]})
    qrels = pd.DataFrame({"qid": ["q1"], "item_id": ["d1"], "grade": [1.5]})
    with pytest.raises(ValueError, match=r"question 'q1', item 'd1' has 1\.5$"):
        per_query_metrics(run, qrels, [10])


def test_a_pyterrier_frame_with_tied_scores_scores_as_pt_evaluate(tmp_path: Path) -> None:
    """pt.Evaluate hands {qid: {docno: score}} to pytrec_eval (score desc, docno desc) and never reads `rank`: a
    PyTerrier frame whose rank column breaks ties otherwise (here docno ascending, as a stable sort of the retrieved
    order gives) scores as pytrec_eval scores its scores; it used to follow the rank column."""
    import rankbench

    frame = tied_run(3).rename(columns={"doc_id": "docno"})
    frame = frame.sort_values(["qid", "score", "docno"], ascending=[True, False, True])
    frame["rank"] = frame.groupby("qid").cumcount()  # PyTerrier's ranks start at 0
    qrels = random_qrels(3)
    nested_qrels: dict[str, dict[str, int]] = {}
    for qid, item, grade in qrels.itertuples(index=False):
        nested_qrels.setdefault(qid, {})[item] = int(grade)
    nested_run: dict[str, dict[str, float]] = {}
    for qid, docno, score in frame[["qid", "docno", "score"]].itertuples(index=False):
        nested_run.setdefault(qid, {})[docno] = score
    reference = pytrec_eval.RelevanceEvaluator(nested_qrels, {"ndcg_cut_10", "P_5"}).evaluate(nested_run)
    relevant = [q for q, items in nested_qrels.items() if max(items.values()) >= 1 and q in reference]
    means = rankbench.evaluate(qrels, frame, ["ndcg@10", "P@5"]).means
    assert means["ndcg@10"] == pytest.approx(np.mean([reference[q]["ndcg_cut_10"] for q in relevant]), abs=1e-12)
    assert means["P@5"] == pytest.approx(np.mean([reference[q]["P_5"] for q in relevant]), abs=1e-12)


def test_gzipped_runs_and_qrels_and_beir_qrels_tsv_are_read(tmp_path: Path) -> None:
    """A .gz run or qrels (known by its magic bytes) reads as the plain file; BEIR's qrels/test.tsv
    (`query-id corpus-id score` under that header, tab-separated) reads as the TREC qrels of the same labels."""
    import gzip

    run_lines = ["q1 Q0 a 1 2.5 tag", "q1 Q0 b 2 1.5 tag", "q2 Q0 c 1 0.5 tag"]
    qrels_lines = ["q1 0 a 2", "q1 0 c 0", "q2 0 c 1"]
    plain_run, plain_qrels = write_lines(tmp_path / "run", run_lines), write_lines(tmp_path / "qrels", qrels_lines)
    (tmp_path / "run.gz").write_bytes(gzip.compress(plain_run.read_bytes()))
    (tmp_path / "qrels.gz").write_bytes(gzip.compress(plain_qrels.read_bytes()))
    pd.testing.assert_frame_equal(read_run(tmp_path / "run.gz"), read_run(plain_run))
    pd.testing.assert_frame_equal(read_qrels(tmp_path / "qrels.gz"), read_qrels(plain_qrels))
    beir = write_lines(tmp_path / "test.tsv", ["query-id\tcorpus-id\tscore", "q1\ta\t2", "q1\tc\t0", "q2\tc\t1"])
    pd.testing.assert_frame_equal(read_qrels(beir), read_qrels(plain_qrels))
    (tmp_path / "beir.tsv.gz").write_bytes(gzip.compress(beir.read_bytes()))
    pd.testing.assert_frame_equal(read_qrels(tmp_path / "beir.tsv.gz"), read_qrels(plain_qrels))
    with pytest.raises(InputError, match=r"test.tsv, line 3: has 2 fields, expected 3.*query-id"):
        read_qrels(write_lines(beir, ["query-id\tcorpus-id\tscore", "q1\ta\t2", "q1\tc"]))
    (tmp_path / "broken.gz").write_bytes(gzip.compress(b"q1 0 a 1\n")[:12])
    with pytest.raises(InputError, match=r"broken.gz: is a damaged gzip file"):
        read_qrels(tmp_path / "broken.gz")
