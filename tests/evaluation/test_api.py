"""The public Python API: the example of docs/reference/python-api.md runs verbatim on small files, and its numbers
equal pytrec_eval's (and scipy's t-test), never rankbench's own; the API is imported lazily and refuses bad input
clearly."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from scipy import stats as sps

import rankbench

pytestmark = pytest.mark.core  # also run from the wheel on Python 3.10-3.13 (scripts/check-wheel.sh)

API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "python-api.md"
MEASURES = {"ndcg@10": "ndcg_cut_10", "P_5": "P_5", "map": "map"}


def documented_example() -> str:
    """The first Python block of the documentation's "Python API" page."""
    return re.search(r"```python\n(.*?)```", API_PAGE.read_text(encoding="utf-8"), re.DOTALL).group(1)


def write_files(folder: Path) -> None:
    """qrels.txt (q9: no relevant label), bm25.trec (tied scores, lines shuffled), dense.trec (q3 missing)."""
    rng = np.random.default_rng(7)
    qrels = [f"q{q} 0 d{d} {rng.integers(0, 4)}" for q in range(9) for d in rng.choice(30, 6, replace=False)]
    (folder / "qrels.txt").write_text("\n".join(qrels + ["q9 0 d1 0", "q9 0 d2 0"]) + "\n")
    for name, scores in (("bm25", lambda: float(rng.integers(0, 4))), ("dense", lambda: float(rng.random()))):
        lines = [f"q{q} Q0 d{d} {r} {scores()} {name}" for q in range(10) if not (name == "dense" and q == 3)
                 for r, d in enumerate(rng.choice(30, 15, replace=False), 1)]
        (folder / f"{name}.trec").write_text("\n".join(rng.permutation(lines)) + "\n")


def trec_eval(folder: Path, run_file: str) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-question values of ndcg_cut_10, P_5 and map."""
    with open(folder / "qrels.txt") as q, open(folder / run_file) as r:
        evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), set(MEASURES.values()))
        return evaluator.evaluate(pytrec_eval.parse_run(r))


def trec_order(run: dict[str, float]) -> list[str]:
    """trec_eval's order of one question's results: score descending, then docno descending."""
    return sorted(run, key=lambda doc: (run[doc], doc), reverse=True)


def test_the_documented_example_runs_and_equals_pytrec_eval(tmp_path: Path, monkeypatch, capsys) -> None:
    write_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(documented_example(), str(API_PAGE), "exec"), namespace)
    assert "hybrid" in capsys.readouterr().out  # the summary printed
    with open(tmp_path / "qrels.txt") as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    relevant = sorted(q for q, labels in qrels.items() if max(labels.values()) >= 1)
    assert len(relevant) == 9 and "q9" not in relevant

    # evaluate: per question and means, as pytrec_eval (a labelled question missing from a run scores 0)
    result = namespace["result"]
    reference = trec_eval(tmp_path, "bm25.trec")
    assert sorted(result.per_query.index) == relevant and list(result.per_query.columns) == list(MEASURES)
    for ours, theirs in MEASURES.items():
        expected = [reference.get(q, {}).get(theirs, 0.0) for q in relevant]
        assert np.allclose(result.per_query.loc[relevant, ours], expected, rtol=0, atol=1e-12), ours
        assert result.means[ours] == pytest.approx(np.mean(expected), abs=1e-12)
    assert result.n_excluded == 1

    # fuse: RRF computed here by hand over trec_eval's order of each run, scored by pytrec_eval
    with open(tmp_path / "bm25.trec") as a, open(tmp_path / "dense.trec") as b:
        inputs = [pytrec_eval.parse_run(a), pytrec_eval.parse_run(b)]
    fused: dict[str, dict[str, float]] = {}
    for run in inputs:
        for qid, results in run.items():
            for rank, doc in enumerate(trec_order(results), 1):
                fused.setdefault(qid, {})[doc] = fused.get(qid, {}).get(doc, 0.0) + 1.0 / (60 + rank)
    (tmp_path / "by_hand.trec").write_text("".join(f"{q} Q0 {d} 0 {s!r} hand\n" for q, docs in fused.items()
                                                   for d, s in docs.items()))
    by_hand = trec_eval(tmp_path, "by_hand.trec")
    assert trec_eval(tmp_path, "hybrid.trec") == by_hand  # write_run keeps the fused order for trec_eval

    # compare: means, differences from the baseline, W/T/L and the t-test from pytrec_eval's values
    comparison = namespace["comparison"]
    values = {"bm25": reference, "dense": trec_eval(tmp_path, "dense.trec"), "hybrid": by_hand}
    summary = comparison.summary.set_index(["method", "metric", "k"])
    for (ours, theirs), (metric, k) in zip((("ndcg@10", "ndcg_cut_10"), ("map", "map")), (("ndcg", 10), ("ap", 0))):
        base = np.array([values["bm25"].get(q, {}).get(theirs, 0.0) for q in relevant])
        for method in ("bm25", "dense", "hybrid"):
            scores = np.array([values[method].get(q, {}).get(theirs, 0.0) for q in relevant])
            row = summary.loc[(method, metric, k)]
            assert row["mean"] == pytest.approx(scores.mean(), abs=1e-12) and row["n"] == 9, (method, ours)
            assert row["ci_low"] <= row["mean"] <= row["ci_high"]
            if method == "bm25":
                assert pd.isna(row["diff"])
                continue
            d = scores - base
            assert row["diff"] == pytest.approx(d.mean(), abs=1e-12)
            assert (row["wins"], row["ties"], row["losses"]) == (
                (d > 1e-12).sum(), (abs(d) <= 1e-12).sum(), (d < -1e-12).sum())
            assert row["p_t"] == pytest.approx(sps.ttest_rel(scores, base).pvalue, rel=1e-9)
    assert len(comparison.pairs) == 2 * 3 and comparison.pairs["p_holm"].between(0, 1).all()


def test_import_rankbench_loads_no_heavy_module() -> None:
    """The Snakefile imports rankbench's subpackages while it is parsed: the package itself must stay light."""
    code = "import sys, rankbench; print([m for m in ('pandas', 'numpy', 'scipy') if m in sys.modules])"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
    assert "evaluate" in dir(rankbench) and callable(rankbench.evaluate)


def test_tables_and_dicts_are_read_and_bad_input_named(tmp_path: Path) -> None:
    qrels = pd.DataFrame({"qid": ["a", "a", "b"], "doc_id": ["x", "y", "x"], "grade": [2, 0, 1]})
    run = {"a": {"x": 0.5, "y": 0.5, "z": 0.9}, "b": {"y": 1.0}}
    result = rankbench.evaluate(qrels, run, "P_1,recip_rank")
    # a: z (unjudged) first, then the tie y (docno desc) before x; b: nothing relevant retrieved
    assert result.per_query.to_dict() == {"P_1": {"a": 0.0, "b": 0.0}, "recip_rank": {"a": 1 / 3, "b": 0.0}}
    with pytest.raises(rankbench.InputError, match=r"the qrels table, rows 1 and 2.*graded more than once"):
        rankbench.read_qrels(pd.DataFrame({"qid": ["a", "a"], "doc_id": ["x", "x"], "grade": [1, 2]}))
    with pytest.raises(rankbench.InputError, match=r"run 'bad', row 2 .*'a'.*finite"):
        rankbench.compare(qrels, {"bad": pd.DataFrame({"qid": ["a", "a"], "doc_id": ["x", "y"],
                                                       "score": [1.0, np.inf]})})
    with pytest.raises(rankbench.InputError, match=r"baseline.*'colbert'.*Use one of: bm25"):
        rankbench.compare(qrels, {"bm25": run}, baseline="colbert")
    with pytest.raises(rankbench.InputError, match=r"metrics.*'bogus'"):
        rankbench.evaluate(qrels, run, ["ndcg@10", "bogus"])
    with pytest.warns(rankbench.UnmatchedRunWarning, match="run chunks .*none of its"):
        rankbench.compare(qrels, {"chunks": {"a": {"x#1": 1.0}}}, "P_1")
    with pytest.raises(rankbench.InputError, match=r"method.*'borda'"):
        rankbench.fuse([run, run], method="borda")


def test_written_runs_and_qrels_read_back(tmp_path: Path) -> None:
    qrels = rankbench.read_qrels({"a": {"x": 2, "y": 0}, "b": {"x": 1}})
    run = rankbench.fuse({"one": {"a": {"x": 2.0, "y": 1.0}}, "two": {"a": {"y": 3.0}, "b": {"x": 1.0}}},
                         method="combsum", normalization="zscore")
    for suffix in (".txt", ".parquet"):
        rankbench.write_qrels(qrels, tmp_path / f"qrels{suffix}")
        pd.testing.assert_frame_equal(rankbench.read_qrels(tmp_path / f"qrels{suffix}"), qrels)
    for suffix in (".trec", ".parquet"):
        rankbench.write_run(run, tmp_path / f"run{suffix}")
        back = rankbench.read_run(tmp_path / f"run{suffix}")
        assert back[["qid", "doc_id", "rank"]].values.tolist() == run[["qid", "doc_id", "rank"]].values.tolist()


def test_every_public_name_is_exported() -> None:
    assert sorted(rankbench.__all__) == sorted(rankbench._EXPORTS)
    for name in rankbench.__all__:
        assert getattr(rankbench, name).__module__.startswith("rankbench.")
