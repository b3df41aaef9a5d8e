"""Learned sparse retrieval: scores are the SparseEncoder's own dot products, cut at k in trec_eval's order, with
the chunk filters of the other first stages; the index file is reproducible; bad encoder blocks fail at start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from model_helpers import hub_cache_layout, tiny_inference_free_encoder, tiny_sparse_encoder
from scipy import sparse
from workflow_helpers import REPO

from rankbench.configuration.config import check_config
from rankbench.configuration.models import resolve_models
from rankbench.corpus.filters import ChunkMasks
from rankbench.errors import InputError
from rankbench.io.ranked_lists import order_by_trec_rule, run_from_topk
from rankbench.retrieval.encoders.sparse import SparseEncoderSpec, encode, load_sparse_encoder, vocabulary
from rankbench.retrieval.sparse import load_matrix, save_matrix, search

PASSAGES = ["Returns policy\nYou may return a bike within 30 days of delivery.",
            "Returns policy\nRefunds are paid to the original card.",
            "Error codes\nBAT-0x1F means the battery is too cold to charge.",
            "Delivery\nBikes arrive within five working days.",
            "Subscription\nThe monthly price is 29 euros.",
            "Helmets\nWe do not sell helmets."]
QUESTIONS = ["How many days do I have to send a bike back?", "What does BAT-0x1F mean?", "When will my bike arrive?",
             "helmets"]
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_sparse_encoder(tmp_path_factory.mktemp("splade"))


def _chunks(n: int) -> pd.DataFrame:
    return pd.DataFrame({"chunk_id": [f"c{i:02d}" for i in range(n)], "doc_id": [f"d{i:02d}" for i in range(n)]})


def test_scores_are_the_sparse_encoders_own_dot_products(model_folder: Path) -> None:
    from sentence_transformers import SparseEncoder

    model = load_sparse_encoder(SparseEncoderSpec(model=str(model_folder), device="cpu"))
    index = encode(model, PASSAGES, is_query=False, batch_size=4)
    queries = encode(model, QUESTIONS, is_query=True, batch_size=4)
    assert index.shape == (len(PASSAGES), len(vocabulary(model))) == (len(PASSAGES), 30522)
    assert 0 < index.nnz < index.shape[0] * index.shape[1] / 10  # sparse, not empty
    reference = SparseEncoder(str(model_folder), device="cpu")
    documents = reference.encode_document(PASSAGES, convert_to_sparse_tensor=False).numpy().astype(np.float64)
    questions = np.stack([reference.encode_query(q, convert_to_sparse_tensor=False).numpy() for q in QUESTIONS])
    expected = questions.astype(np.float64) @ documents.T
    positions, scores = search(index, queries, k=3)
    run = run_from_topk([f"q{i}" for i in range(len(QUESTIONS))], positions, scores, _chunks(len(PASSAGES)), 3)
    for row in run.itertuples():
        assert row.score == pytest.approx(expected[int(row.qid[1:]), int(row.chunk_id[1:])], rel=1e-5)
    brute = pd.DataFrame([{"qid": f"q{q}", "rank": 0, "chunk_id": f"c{d:02d}", "doc_id": f"d{d:02d}",
                           "score": expected[q, d]} for q in range(len(QUESTIONS)) for d in range(len(PASSAGES))
                          if expected[q, d] > 0])
    expected_run = order_by_trec_rule(brute, depth=3)
    assert list(zip(run["qid"], run["chunk_id"])) == list(zip(expected_run["qid"], expected_run["chunk_id"]))


def test_an_inference_free_model_weights_questions_by_its_table(tmp_path: Path) -> None:
    """Doc-only models (opensearch's): the question side is a weight table over the question's own tokens, the
    document side a SPLADE model; search scores are the model's own dot products."""
    from sentence_transformers import SparseEncoder

    folder = tiny_inference_free_encoder(tmp_path)
    model = load_sparse_encoder(SparseEncoderSpec(model=str(folder), device="cpu"))
    queries = encode(model, QUESTIONS, is_query=True, batch_size=4)
    index = encode(model, PASSAGES, is_query=False, batch_size=4)
    tokens = model.tokenizer(QUESTIONS[2], add_special_tokens=False)["input_ids"]
    assert sorted(queries[2].indices) == sorted(set(tokens))  # no expansion: only the question's tokens
    reference = SparseEncoder(str(folder), device="cpu")
    expected = (reference.encode_query(QUESTIONS, convert_to_sparse_tensor=False).numpy().astype(np.float64)
                @ reference.encode_document(PASSAGES, convert_to_sparse_tensor=False).numpy().astype(np.float64).T)
    positions, scores = search(index, queries, k=len(PASSAGES))
    for row in range(len(QUESTIONS)):
        found = positions[row] >= 0
        np.testing.assert_allclose(scores[row][found], expected[row, positions[row][found]], rtol=1e-5)


def test_ties_are_cut_at_k_in_trec_eval_order() -> None:
    """Five chunks tie for the top: the run keeps the three trec_eval ranks first (highest id first), not the
    first three positions."""
    index = sparse.csr_matrix(np.array([[1.0, 0], [1.0, 0], [0, 2.0], [1.0, 0], [1.0, 0], [1.0, 0], [0, 0]]))
    queries = sparse.csr_matrix(np.array([[1.0, 0.25]]))
    positions, scores = search(index, queries, k=3)
    run = run_from_topk(["q"], positions, scores, _chunks(7), 3)
    assert list(run["chunk_id"]) == ["c05", "c04", "c03"]  # score 1.0 ties (c02 scores 0.5); id descending
    assert list(run["rank"]) == [1, 2, 3]
    positions, scores = search(index, sparse.csr_matrix(np.array([[0, 1.0]])), k=3)
    assert list(run_from_topk(["q"], positions, scores, _chunks(7), 3)["chunk_id"]) == ["c02"]  # no overlap: no hit


def test_filters_remove_chunks_before_the_cut() -> None:
    index = sparse.csr_matrix(np.array([[3.0], [2.0], [1.0], [0.5]]))
    queries = sparse.csr_matrix(np.array([[1.0], [1.0]]))
    masks = ChunkMasks(group=np.array([0, 1]), masks=np.array([[True] * 4, [False, True, False, True]]))
    positions, scores = search(index, queries, k=2, allowed=masks)
    run = run_from_topk(["open", "masked"], positions, scores, _chunks(4), 2)
    assert run.groupby("qid")["chunk_id"].apply(list).to_dict() == {"open": ["c00", "c01"],
                                                                     "masked": ["c01", "c03"]}


def test_a_query_of_another_vocabulary_is_refused() -> None:
    with pytest.raises(ValueError, match="encoded with another model"):
        search(sparse.csr_matrix((2, 5)), sparse.csr_matrix((1, 4)), k=1)


def test_the_index_file_is_reproducible(tmp_path: Path) -> None:
    matrix = sparse.csr_matrix(np.array([[0, 1.5, 0], [2.0, 0, 0.25]], dtype=np.float32))
    vocab = np.asarray(["[PAD]", "bike", "##s"])
    save_matrix(matrix, vocab, tmp_path / "a.npz")
    save_matrix(matrix, vocab, tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    loaded, loaded_vocab = load_matrix(tmp_path / "a.npz")
    assert (loaded != matrix).nnz == 0 and list(loaded_vocab) == list(vocab)


def _config(encoder: dict, method: dict | None = None) -> dict:
    config = yaml.safe_load((REPO / "tests/fixtures/mini/config.yaml").read_text())
    return {**config, "encoders": {"splade": encoder},
            "methods": {"splade": method or {"type": "sparse", "encoder": "splade"}}}


def test_a_bad_sparse_encoder_block_fails_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert check_config(_config({"kind": "sparse", "model": str(tmp_path), "batch_size": 8, "device": "cpu"}),
                        SCHEMA, "c.yaml") == {"splade": {"type": "sparse", "encoder": "splade"}}
    with pytest.raises(InputError, match=r"encoders\.splade\.model.*'\./models/none' is neither an existing folder"):
        check_config(_config({"kind": "sparse", "model": "./models/none"}), SCHEMA, "c.yaml")
    assert check_config(_config({"kind": "sparse", "model": "naver/splade-v3", "revision": "v1"}), SCHEMA, "c.yaml")
    with pytest.raises(InputError, match=r"encoders\.splade\.shards.*does not apply to kind sparse"):
        check_config(_config({"kind": "sparse", "model": str(tmp_path), "shards": 2}), SCHEMA, "c.yaml")
    with pytest.raises(InputError, match=r"encoders\.splade.*'model' is a required property"):
        check_config(_config({"kind": "sparse"}), SCHEMA, "c.yaml")


def test_a_sparse_hub_id_loads_its_cached_snapshot_and_resolves_at_start(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A SPLADE model named by hub id (pinned by tag) loads from the local Hugging Face cache, offline, with the
    same weights as its folder; the start resolves it to its commit and a missing one says how to download it."""
    folder = tiny_sparse_encoder(tmp_path / "splade")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    commit = "4" * 40
    hub_cache_layout(folder, tmp_path / "hf" / "hub", "naver/tiny-splade", commit, ("main", "v1"))
    texts = ["battery code BAT-0x1F", "return a bike within 30 days"]
    by_folder = encode(load_sparse_encoder(SparseEncoderSpec(model=str(folder), device="cpu")), texts, False, 8)
    by_id = encode(load_sparse_encoder(SparseEncoderSpec(model="naver/tiny-splade", revision="v1", device="cpu")),
                   texts, False, 8)
    assert by_id.shape == by_folder.shape and (by_id != by_folder).nnz == 0
    config = _config({"kind": "sparse", "model": "naver/tiny-splade", "revision": "v1"})
    assert resolve_models(config, "c.yaml", download=True) == {"encoders.splade": commit}
    missing = _config({"kind": "sparse", "model": "naver/splade-v3"})
    with pytest.raises(InputError, match=r"hf download naver/splade-v3"):
        resolve_models(missing, "c.yaml", download=True)
