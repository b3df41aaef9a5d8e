"""rankbench takes what users of ranx, ir_measures, PyTerrier, ir_datasets and pytrec_eval hold, and what it writes
reads back in those libraries to rankbench's own numbers (ranx and ir_measures are test dependencies only; PyTerrier
is not installed, its frame formats are built with pandas: qid, docno, score, rank / qid, docno, label)."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
import pytrec_eval

import rankbench
from rankbench.errors import InputError

pytestmark = pytest.mark.slow  # ranx compiles its numba kernels on first use (~30 s of CPU)
ranx = pytest.importorskip("ranx")


def toy(seed: int = 0, topics: int = 12, depth: int = 15) -> tuple[dict, dict]:
    """Graded qrels (0-2, one topic with no relevant label) and a run with distinct float scores."""
    rng = np.random.default_rng(seed)
    qrels = {f"q{t}": {f"d{d}": int(rng.integers(0, 3)) for d in rng.choice(40, 8, replace=False)}
             for t in range(topics)}
    qrels["q0"] = dict.fromkeys(qrels["q0"], 0)
    run = {f"q{t}": {f"d{d}": float(s) for d, s in zip(rng.choice(40, depth, replace=False), rng.normal(size=depth))}
           for t in range(topics)}
    return qrels, run


@pytest.fixture(scope="module")
def data() -> tuple[dict, dict]:
    return toy()


def pytrec_means(qrels: dict, run: dict, measures: set[str]) -> dict[str, float]:
    """pytrec_eval's means over the topics with a relevant label (rankbench's convention)."""
    values = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    relevant = [q for q, items in qrels.items() if max(items.values()) >= 1]
    return {m: float(np.mean([values.get(q, {}).get(m, 0.0) for q in relevant])) for m in measures}


def test_ranx_qrels_and_run_are_read(data: tuple[dict, dict]) -> None:
    """The issue's call: rankbench.evaluate(ranx_qrels, ranx_run) (a TypeError before)."""
    qrels, run = data
    result = rankbench.evaluate(ranx.Qrels(qrels), ranx.Run(run, name="mine"), ["ndcg@10", "map"])
    expected = pytrec_means(qrels, run, {"ndcg_cut_10", "map"})
    assert result.means["ndcg@10"] == pytest.approx(expected["ndcg_cut_10"], abs=1e-12)
    assert result.means["map"] == pytest.approx(expected["map"], abs=1e-12)
    assert rankbench.compare(ranx.Qrels(qrels), {"a": ranx.Run(run)}, "P@5", n_resamples=100).summary["n"].iloc[0] == 11


def test_ir_measures_objects_and_names_score_as_ir_measures(data: tuple[dict, dict]) -> None:
    """The issue's call: metrics as ir_measures objects (an AttributeError before), and its names as text."""
    qrels, run = data
    measures = [ir_measures.nDCG @ 10, ir_measures.P @ 5, ir_measures.RR @ 10, ir_measures.AP, ir_measures.R @ 100,
                ir_measures.Success @ 1, ir_measures.Rprec, ir_measures.Bpref, ir_measures.Judged @ 10]
    relevant = {q: items for q, items in qrels.items() if max(items.values()) >= 1}
    reference = ir_measures.calc_aggregate(measures, relevant, run)
    ours = rankbench.evaluate(qrels, run, measures).means
    for measure in measures:
        assert ours[str(measure)] == pytest.approx(reference[measure], abs=1e-9), measure
    texts = rankbench.evaluate(qrels, run, [str(m) for m in measures] + ["infAP", "ERR@10", "RBP(p=0.5)"]).means
    assert texts[:len(measures)].to_numpy() == pytest.approx(ours.to_numpy(), abs=1e-15)
    rbp = rankbench.evaluate(qrels, run, ["rbp"], rbp_p=0.5).means["rbp"]
    assert texts["RBP(p=0.5)"] == pytest.approx(rbp, abs=1e-15)
    assert rankbench.evaluate(qrels, run, [ir_measures.RBP(p=0.5)]).means.iloc[0] == pytest.approx(rbp, abs=1e-15)


def test_ranx_metric_names_score_as_ranx(data: tuple[dict, dict]) -> None:
    """The issue's call: ranx's hit_rate@1 ("cannot read metric" before), mrr@10, map@100, ndcg@10, r-precision."""
    qrels, run = data
    names = ["hit_rate@1", "mrr@10", "map@100", "ndcg@10", "r-precision", "precision@5", "recall@10"]
    relevant = {q: items for q, items in qrels.items() if max(items.values()) >= 1}
    reference = ranx.evaluate(ranx.Qrels(relevant), ranx.Run(run), names, make_comparable=True)
    ours = rankbench.evaluate(qrels, run, names).means
    for name in names:
        assert ours[name] == pytest.approx(reference[name], abs=1e-9), name


def test_pyterrier_frames_and_ir_datasets_iterables_are_read(data: tuple[dict, dict]) -> None:
    """The issue's call: a PyTerrier result frame (qid, docno, score, rank; "lacks column(s) ['doc_id']" before)
    with PyTerrier qrels (qid, docno, label); ir_datasets / ir_measures record iterables."""
    qrels, run = data
    result = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                          columns=["qid", "docno", "score"])
    result["rank"] = result.groupby("qid")["score"].rank(ascending=False, method="first").astype(int) - 1
    labels = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
                          columns=["qid", "docno", "label"])
    expected = rankbench.evaluate(qrels, run, "ndcg@10").means.iloc[0]
    assert rankbench.evaluate(labels, result, "ndcg@10").means.iloc[0] == expected
    records = (ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items())
    scored = (ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items())
    assert rankbench.evaluate(records, scored, "ndcg@10").means.iloc[0] == expected
    from ir_datasets.formats import TrecQrel  # what dataset.qrels_iter() yields

    trec_qrels = [TrecQrel(q, d, g, "0") for q, docs in qrels.items() for d, g in docs.items()]
    assert rankbench.evaluate(iter(trec_qrels), run, "ndcg@10").means.iloc[0] == expected


def test_anything_else_is_one_error_listing_the_forms(data: tuple[dict, dict]) -> None:
    qrels, run = data
    with pytest.raises(InputError, match=r"run 'run': is a builtins.int.*PyTerrier.*ranx Run"):
        rankbench.evaluate(qrels, 5)
    with pytest.raises(InputError, match=r"lacks column\(s\) \['doc_id'\].*PyTerrier"):
        rankbench.evaluate(qrels, pd.DataFrame({"qid": ["q1"], "document": ["d1"], "score": [1.0]}))
    with pytest.raises(InputError, match=r"cannot read metric 'dcg_burges@10'.*ir_measures"):
        rankbench.evaluate(qrels, run, "dcg_burges@10")
    with pytest.raises(InputError, match=r"no parameter 'rel'"):
        rankbench.evaluate(qrels, run, [ir_measures.P(rel=2) @ 5])


def test_exported_runs_read_back_in_ranx_ir_measures_and_pytrec_eval(data: tuple[dict, dict],
                                                                      tmp_path: Path) -> None:
    """A run rankbench writes (its own scores) gives rankbench's table values in the three libraries."""
    qrels, run = data
    path = tmp_path / "mine.trec"
    rankbench.write_run(rankbench.read_run(run), path, tag="mine")
    rankbench.write_qrels(rankbench.read_qrels(qrels), tmp_path / "qrels.txt")
    ours = rankbench.evaluate(qrels, run, ["ndcg@10", "P@5", "map"]).means
    relevant = {q: items for q, items in qrels.items() if max(items.values()) >= 1}
    from_ranx = ranx.evaluate(ranx.Qrels(relevant), ranx.Run.from_file(str(path), kind="trec"),
                              ["ndcg@10", "precision@5", "map"], make_comparable=True)
    assert [from_ranx["ndcg@10"], from_ranx["precision@5"], from_ranx["map"]] == pytest.approx(list(ours), abs=1e-9)
    read_back = list(ir_measures.read_trec_run(str(path)))
    assert {(r.query_id, r.doc_id): r.score for r in read_back} == {(q, d): s for q, docs in run.items()
                                                                    for d, s in docs.items()}  # the scores exactly
    measures = [ir_measures.nDCG @ 10, ir_measures.P @ 5, ir_measures.AP]
    measured = ir_measures.calc_aggregate(measures, relevant, read_back)  # a dict, not in the order asked
    assert [measured[m] for m in measures] == pytest.approx(list(ours), abs=1e-9)
    with open(path) as handle, open(tmp_path / "qrels.txt") as labels:
        parsed = pytrec_eval.parse_run(handle)
        qrels_back = pytrec_eval.parse_qrel(labels)
    assert pytrec_means(qrels_back, parsed, {"ndcg_cut_10", "P_5", "map"}) == pytest.approx(
        {"ndcg_cut_10": ours["ndcg@10"], "P_5": ours["P@5"], "map": ours["map"]}, abs=1e-9)


def test_ranx_fuse_over_exported_runs_equals_rankbench_fuse(tmp_path: Path) -> None:
    """CombSUM over min-max normalized scores: the same fused scores and order (every topic has distinct scores;
    for a topic whose scores are all equal, ranx normalizes to 0 and rankbench to 1)."""
    runs = {name: toy(seed)[1] for name, seed in (("a", 1), ("b", 2), ("c", 3))}
    paths = []
    for name, run in runs.items():
        paths.append(tmp_path / f"{name}.trec")
        rankbench.write_run(rankbench.read_run(run), paths[-1], tag=name)
    theirs = ranx.fuse([ranx.Run.from_file(str(p), kind="trec") for p in paths], norm="min-max", method="sum")
    ours = rankbench.fuse(paths, method="combsum", normalization="minmax", depth=1000)
    expected = {(q, d): s for q, docs in theirs.to_dict().items() for d, s in docs.items()}
    got = dict(zip(zip(ours["qid"], ours["doc_id"]), ours["score"]))
    assert got.keys() == expected.keys()
    assert [got[key] for key in expected] == pytest.approx(list(expected.values()), abs=1e-12)


def test_comment_lines_in_a_run_break_ranx_ir_measures_and_pytrec_eval(tmp_path: Path) -> None:
    """Why ir_metadata goes in a YAML file beside the run, not as `#` lines in it: trec_eval skips such lines,
    but the three Python readers fail on them."""
    path = tmp_path / "annotated.trec"
    path.write_text("# ir_metadata.start\n# tag: mine\n# ir_metadata.end\nq1 Q0 d1 1 2.5 mine\n")
    with pytest.raises(ValueError):
        ranx.Run.from_file(str(path), kind="trec")
    with pytest.raises(ValueError):
        list(ir_measures.read_trec_run(str(path)))
    with pytest.raises(ValueError), open(path) as handle:
        pytrec_eval.parse_run(handle)
