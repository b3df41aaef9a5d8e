"""Tests of rankbench.io.ranked_lists (trec_eval order, top-k runs, document collapse), fusion (RRF) and rerank."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation.metrics import per_query_metrics
from rankbench.io.ranked_lists import (
    RUN_COLUMNS,
    collapse_to_documents,
    order_by_trec_rule,
    run_from_topk,
)
from rankbench.retrieval.fusion import reciprocal_rank_fusion
from rankbench.retrieval.rerank import bi_encoder_scorer, cross_encoder_scorer, rerank

pytrec_eval = pytest.importorskip("pytrec_eval")


def make_run(rows: list[tuple[str, str, float]], ranked: bool = True) -> pd.DataFrame:
    """A run from (qid, chunk_id, score); doc_id is the chunk id before '#'; ranks in the given order per qid."""
    frame = pd.DataFrame(rows, columns=["qid", "chunk_id", "score"])
    frame["doc_id"] = frame["chunk_id"].str.split("#").str[0]
    frame["rank"] = frame.groupby("qid").cumcount() + 1 if ranked else 0
    return frame[RUN_COLUMNS]


def listing(run: pd.DataFrame, qid: str) -> list[str]:
    part = run[run["qid"] == qid].sort_values("rank")
    return part["chunk_id"].tolist()


# --------------------------------------------------------------------------- order_by_trec_rule


def test_order_by_score_then_id_desc_and_renumber() -> None:
    run = make_run([("q2", "a", 1.0), ("q1", "b", 0.5), ("q1", "c", 0.9), ("q1", "a", 0.5), ("q1", "d10", 0.5),
                    ("q1", "d9", 0.5)], ranked=False)
    ordered = order_by_trec_rule(run)
    assert listing(ordered, "q1") == ["c", "d9", "d10", "b", "a"]  # ids compared as strings, descending
    assert ordered.groupby("qid")["rank"].apply(list).to_dict() == {"q1": [1, 2, 3, 4, 5], "q2": [1]}
    cut = order_by_trec_rule(run, depth=2)
    assert listing(cut, "q1") == ["c", "d9"] and listing(cut, "q2") == ["a"]
    by_doc = order_by_trec_rule(run.assign(doc_id=["z", "a", "b", "c", "b", "a"]), id_column="doc_id")
    assert by_doc[by_doc["qid"] == "q1"]["doc_id"].tolist() == ["b", "c", "b", "a", "a"]
    assert listing(by_doc, "q1") == ["c", "a", "d10", "b", "d9"]  # equal (score, id): input order kept


def test_tie_order_matches_pytrec_eval() -> None:
    """pytrec_eval (trec_eval) re-sorts a run by score desc then docid desc; our order must agree, which
    shows in P@1 when the relevant item is tied with an unlabelled one."""
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"B": 1}}
    run = make_run([("q1", "a", 2.0), ("q1", "b", 2.0), ("q1", "c", 1.0),
                    ("q2", "a", 2.0), ("q2", "b", 2.0),
                    ("q3", "b", 3.0), ("q3", "B", 3.0)], ranked=False)
    ordered = order_by_trec_rule(run)
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(
        {q: dict(zip(g["chunk_id"], g["score"])) for q, g in run.groupby("qid")})
    ours = per_query_metrics(ordered.rename(columns={"chunk_id": "item_id"}),
                             pd.DataFrame([(q, i, g) for q, items in qrels.items() for i, g in items.items()],
                                          columns=["qid", "item_id", "grade"]),
                             [1], metrics=["precision"])
    assert dict(zip(ours["qid"], ours["value"])) == {q: v["P_1"] for q, v in reference.items()}
    assert [reference[q]["P_1"] for q in ("q1", "q2", "q3")] == [0.0, 1.0, 0.0]  # the ties do matter


# --------------------------------------------------------------------------- run_from_topk


def chunk_table() -> pd.DataFrame:
    return pd.DataFrame({"chunk_id": ["d1#a", "d1#b", "d2#a", "d3#a"], "doc_id": ["d1", "d1", "d2", "d3"]})


def test_run_from_topk_drops_missing_positions() -> None:
    positions = np.array([[2, 0, -1], [3, 1, 0]])
    scores = np.array([[0.9, 0.4, -3.4e38], [0.5, 0.5, -0.1]], dtype=np.float32)
    run = run_from_topk(["q1", "q2"], positions, scores, chunk_table(), depth=10)
    assert list(run.columns) == RUN_COLUMNS
    assert listing(run, "q1") == ["d2#a", "d1#a"]
    assert listing(run, "q2") == ["d3#a", "d1#b", "d1#a"]  # tie at 0.5 broken by id desc
    assert run["doc_id"].tolist() == ["d2", "d1", "d3", "d1", "d1"]
    assert run["rank"].tolist() == [1, 2, 1, 2, 3]
    assert run["score"].dtype == np.float64
    assert run_from_topk(["q1", "q2"], positions, scores, chunk_table(), depth=1)["chunk_id"].tolist() == \
        ["d2#a", "d3#a"]


def test_run_from_topk_drop_nonpositive() -> None:
    positions = np.array([[0, 1, 2, 3]])
    scores = np.array([[2.0, 0.0, -1.0, 1.0]])
    kept = run_from_topk(["q1"], positions, scores, chunk_table(), depth=10, drop_nonpositive=True)
    assert kept["chunk_id"].tolist() == ["d1#a", "d3#a"] and kept["rank"].tolist() == [1, 2]
    everything = run_from_topk(["q1"], positions, scores, chunk_table(), depth=10)
    assert everything["chunk_id"].tolist() == ["d1#a", "d3#a", "d1#b", "d2#a"]


# --------------------------------------------------------------------------- collapse_to_documents


def test_collapse_keeps_first_chunk_per_document() -> None:
    run = make_run([("q1", "d1#b", 0.9), ("q1", "d2#a", 0.8), ("q1", "d1#a", 0.7), ("q1", "d3#a", 0.6),
                    ("q1", "d2#b", 0.5), ("q2", "d2#b", 0.3), ("q2", "d2#a", 0.2)])
    collapsed = collapse_to_documents(run.sample(frac=1.0, random_state=3))
    q1 = collapsed[collapsed["qid"] == "q1"]
    assert q1["doc_id"].tolist() == ["d1", "d2", "d3"]
    assert q1["chunk_id"].tolist() == ["d1#b", "d2#a", "d3#a"]
    assert q1["score"].tolist() == [0.9, 0.8, 0.6]
    assert q1["rank"].tolist() == [1, 2, 3]
    q2 = collapsed[collapsed["qid"] == "q2"]
    assert q2[["chunk_id", "rank"]].values.tolist() == [["d2#b", 1]]


# --------------------------------------------------------------------------- reciprocal rank fusion


def test_rrf_matches_hand_computation() -> None:
    bm25 = make_run([("q1", "c1#x", 9.0), ("q1", "c2#x", 8.0), ("q1", "c3#x", 7.0), ("q2", "c1#x", 1.0)])
    dense = make_run([("q1", "c3#x", 0.9), ("q1", "c4#x", 0.8), ("q2", "c5#x", 0.7), ("q2", "c1#x", 0.6)])
    fused = reciprocal_rank_fusion([bm25, dense], k=60, depth=100)
    expected = {
        ("q1", "c3#x"): 1 / 63 + 1 / 61, ("q1", "c1#x"): 1 / 61, ("q1", "c2#x"): 1 / 62, ("q1", "c4#x"): 1 / 62,
        ("q2", "c1#x"): 1 / 61 + 1 / 62, ("q2", "c5#x"): 1 / 61,
    }
    got = {(q, c): s for q, c, s in fused[["qid", "chunk_id", "score"]].itertuples(index=False)}
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-15)
    # c2 and c4 tie at 1/62: id desc puts c4 first.
    assert listing(fused, "q1") == ["c3#x", "c1#x", "c4#x", "c2#x"]
    assert listing(fused, "q2") == ["c1#x", "c5#x"]
    assert fused.groupby("qid")["rank"].apply(list).to_dict() == {"q1": [1, 2, 3, 4], "q2": [1, 2]}
    assert dict(zip(fused["chunk_id"], fused["doc_id"]))["c4#x"] == "c4"


def test_rrf_k_and_depth_and_single_run() -> None:
    run = make_run([("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0)])
    fused = reciprocal_rank_fusion([run], k=0, depth=2)
    assert fused["chunk_id"].tolist() == ["a", "b"]
    assert fused["score"].tolist() == [1.0, 0.5]
    with pytest.raises(ValueError, match="at least one"):
        reciprocal_rank_fusion([])


# --------------------------------------------------------------------------- rerank


class RecordingScorer:
    """Scores pairs by a fixed table and records which pairs it was asked about."""

    def __init__(self, table: dict[tuple[str, str], float]) -> None:
        self.table, self.calls = table, []

    def __call__(self, pairs: pd.DataFrame) -> np.ndarray:
        self.calls.append(list(zip(pairs["qid"], pairs["chunk_id"])))
        return np.array([self.table[(q, c)] for q, c in zip(pairs["qid"], pairs["chunk_id"])])


def first_stage() -> pd.DataFrame:
    return make_run([("q1", f"d{i}#s", 10.0 - i) for i in range(1, 7)] + [("q2", f"e{i}#s", 5.0 - i)
                                                                           for i in range(1, 3)])


def test_rerank_rescores_only_the_head() -> None:
    run = first_stage()
    table = {("q1", "d1#s"): 0.1, ("q1", "d2#s"): 0.9, ("q1", "d3#s"): 0.5, ("q1", "d4#s"): 0.5,
             ("q2", "e1#s"): -1.0, ("q2", "e2#s"): 2.0}
    scorer = RecordingScorer(table)
    reranked = rerank(run, rerank_depth=4, score_pairs=scorer)
    asked = [pair for call in scorer.calls for pair in call]
    assert sorted(asked) == sorted(table)  # exactly the top 4 of q1 and all of q2 (shorter than depth)
    assert list(reranked.columns) == RUN_COLUMNS + ["first_stage_rank"]
    # Head by new score (tie 0.5: id desc), then the tail in first-stage order.
    assert listing(reranked, "q1") == ["d2#s", "d4#s", "d3#s", "d1#s", "d5#s", "d6#s"]
    assert listing(reranked, "q2") == ["e2#s", "e1#s"]
    q1 = reranked[reranked["qid"] == "q1"].sort_values("rank")
    assert q1["first_stage_rank"].tolist() == [2, 4, 3, 1, 5, 6]
    assert q1["score"].tolist()[:4] == [0.9, 0.5, 0.5, 0.1]
    assert (np.diff(q1["score"].to_numpy()) <= 0).all()  # scores agree with ranks, tail under the head
    for _, group in reranked.groupby("qid"):
        assert sorted(group["rank"]) == list(range(1, len(group) + 1))
    assert len(reranked) == len(run)
    assert dict(zip(reranked["chunk_id"], reranked["doc_id"])) == dict(zip(run["chunk_id"], run["doc_id"]))


def test_rerank_tail_stays_below_negative_head_scores() -> None:
    run = first_stage()
    scorer = RecordingScorer({(q, c): -100.0 - i for i, (q, c) in enumerate(zip(run["qid"], run["chunk_id"]))})
    reranked = rerank(run, rerank_depth=2, score_pairs=scorer)
    assert listing(reranked, "q1") == ["d1#s", "d2#s", "d3#s", "d4#s", "d5#s", "d6#s"]
    assert len(scorer.calls[0]) == 4


def test_bi_encoder_scorer_is_dot_product() -> None:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 8)).astype(np.float32)
    c = rng.normal(size=(5, 8)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    score = bi_encoder_scorer(["qa", "qb", "qc"], q, ["c0", "c1", "c2", "c3", "c4"], c)
    pairs = pd.DataFrame({"qid": ["qc", "qa", "qa", "qb"], "chunk_id": ["c4", "c0", "c3", "c3"]})
    np.testing.assert_allclose(score(pairs), [q[2] @ c[4], q[0] @ c[0], q[0] @ c[3], q[1] @ c[3]], rtol=1e-6)



def test_a_run_of_document_ids_is_not_scored_with_another_chunks_vector() -> None:
    """Regression: an id the chunks lack (an imported run's document id) took the last chunk's vector (index -1)."""
    vectors = np.eye(2, dtype=np.float32)
    score = bi_encoder_scorer(["q"], vectors[:1], ["doc#0", "doc#1"], vectors)
    with pytest.raises(ValueError, match=r"1 results name no chunk of the corpus \(e\.g\. 'doc'\)"):
        score(pd.DataFrame({"qid": ["q", "q"], "chunk_id": ["doc#0", "doc"]}))

# --------------------------------------------------------------------------- cross-encoder (tiny, built here)

WORDS = "how many days do i have to return a bike refunds are paid the card delivery tracking link what is".split()


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 1-layer BERT with a 1-logit head and a WordPiece vocab written here: no download."""
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS)), "?", "."]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1, initializer_range=0.5)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


def test_cross_encoder_scorer_with_tiny_model(tiny_cross_encoder: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    questions = {"q1": "how many days do i have to return a bike?", "q2": "what is the tracking link?"}
    passages = {"c1": "refunds are paid to the card.", "c2": "delivery tracking link.", "c3": "return a bike."}
    score = cross_encoder_scorer(str(tiny_cross_encoder), questions, passages, batch_size=2)
    pairs = pd.DataFrame({"qid": ["q1", "q1", "q2", "q1", "q2"], "chunk_id": ["c1", "c3", "c2", "c2", "c1"]})
    got = score(pairs)
    assert got.shape == (5,) and got.dtype == np.float64

    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    batch = tokenizer([questions[q] for q in pairs["qid"]], [passages[c] for c in pairs["chunk_id"]],
                      padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits.squeeze(-1).double()
    expected = torch.sigmoid(logits).numpy()  # a 1-logit CrossEncoder returns sigmoid(logit)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert len(set(np.round(got, 6))) > 1  # the pair matters
    assert score(pairs.iloc[:0]).shape == (0,)

    reranked = rerank(make_run([("q1", "c1", 3.0), ("q1", "c2", 2.0), ("q1", "c3", 1.0)]), 3, score)
    order = np.argsort(-expected[[0, 3, 1]], kind="stable")
    assert reranked["chunk_id"].tolist() == [["c1", "c2", "c3"][i] for i in order]


def test_cross_encoder_unknown_model_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    started = time.monotonic()
    with pytest.raises(ValueError, match=r"neither a packaged model.*a local folder nor a hub id") as info:
        cross_encoder_scorer(str(tmp_path / "missing"), {}, {})
    with pytest.raises(ValueError, match=r"not in the Hugging Face cache.*hf download cross-encoder/ms-marco"):
        cross_encoder_scorer("cross-encoder/ms-marco-MiniLM-L-6-v2", {}, {})
    assert "ms-marco" in str(info.value) or "missing" in str(info.value)
    assert time.monotonic() - started < 30
