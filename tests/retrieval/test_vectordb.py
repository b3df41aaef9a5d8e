"""The vector-database method on a real embedded LanceDB: exact search ranks as FAISS flat does, an ANN index's loss
is measured against exact search, an existing collection is only read and its foreign ids are kept and counted,
and bad settings fail at start naming the method's key."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lancedb", reason="the vectordb extra (lancedb) is not installed")

from rankbench.errors import InputError
from rankbench.io.ranked_lists import report_unknown_documents, run_from_topk
from rankbench.retrieval import dense
from rankbench.retrieval import vectordb as vdb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def corpus() -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """600 chunk vectors in 12 clusters (two chunks a document), 30 queries near them."""
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((12, 24))
    vectors = _unit(centres[rng.integers(0, 12, 600)] + 0.6 * rng.standard_normal((600, 24)))
    queries = _unit(centres[rng.integers(0, 12, 30)] + 0.6 * rng.standard_normal((30, 24)))
    chunks = pd.DataFrame({"chunk_id": [f"d{i // 2}#{i % 2}" for i in range(600)],
                           "doc_id": [f"d{i // 2}" for i in range(600)]})
    return vectors, queries, chunks


EXACT = vdb.VectorIndex()


def _table(vectors: np.ndarray, chunks: pd.DataFrame, folder: Path, index: vdb.VectorIndex = EXACT):
    vdb.build_collection(vectors, chunks["chunk_id"], folder / "c.lancedb", index)
    return vdb.open_table(vdb.searched_collection(None, folder / "c.json"), "test")


QIDS = pd.Series([f"q{i}" for i in range(30)])


def test_exact_search_returns_faiss_flats_ranking(corpus, tmp_path: Path) -> None:
    vectors, queries, chunks = corpus
    ids, scores = vdb.search_table(_table(vectors, chunks, tmp_path), queries, 50)
    run = vdb.run_from_ids(QIDS, ids, scores, chunks, 50)
    positions, faiss_scores = dense.search(dense.build_index(vectors), queries, 50)
    reference = run_from_topk(QIDS, positions, faiss_scores, chunks, 50)
    assert len(run) == len(reference) == 30 * 50
    assert run[["qid", "rank", "chunk_id", "doc_id"]].equals(reference[["qid", "rank", "chunk_id", "doc_id"]])
    np.testing.assert_allclose(run["score"], reference["score"], atol=1e-6)
    one_ids, one_scores = vdb.search_table(_table(vectors, chunks, tmp_path / "one"), queries[:1], 50)  # as timed
    assert (one_ids == ids[:1]).all() and (one_scores == scores[:1]).all()


def test_an_ann_index_loses_recall_that_exact_search_measures(corpus, tmp_path: Path) -> None:
    _, _, chunks = corpus
    rng = np.random.default_rng(3)  # no clusters: one probed partition of 12 misses neighbours whatever k-means finds
    vectors, queries = _unit(rng.standard_normal((600, 24))), _unit(rng.standard_normal((30, 24)))
    index = vdb.VectorIndex(kind="ivf_flat", partitions=12, nprobes=1)
    table = _table(vectors, chunks, tmp_path, index)
    truth = np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :10]
    one_probe = vdb.ann_recall(table, queries, [10], index)
    found, _ = vdb.search_table(table, queries, 10, index)
    by_hand = np.mean([len(set(row) & set(chunks["chunk_id"].to_numpy()[t])) / 10 for row, t in zip(found, truth)])
    assert one_probe["recall_mean"].iloc[0] == pytest.approx(by_hand)
    assert by_hand < 1.0
    every_partition = vdb.VectorIndex(kind="ivf_flat", partitions=12, nprobes=12)
    assert vdb.ann_recall(table, queries, [10], every_partition)["recall_mean"].iloc[0] == 1.0


def test_index_names_hold_build_parameters_only() -> None:
    assert vdb.VectorIndex().name == "flat"
    assert vdb.VectorIndex(kind="ivf_pq", partitions=8, sub_vectors=4, nprobes=3).name == "ivf_pq-p8-sv4"
    assert vdb.VectorIndex(kind="ivf_hnsw_sq", ef=10).build_params == {"kind": "ivf_hnsw_sq", "partitions": 32,
                                                                       "m": 20, "ef_construction": 300}
    with pytest.raises(ValueError, match="unknown vector index kind"):
        vdb.VectorIndex(kind="hnsw")


def test_an_existing_collection_is_read_and_its_foreign_ids_kept_and_counted(
        corpus, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A team's collection of documents (doc ids, one foreign) under its own column names and metric."""
    import lancedb
    import pyarrow as pa

    vectors, queries, chunks = corpus
    team = np.vstack([vectors[:4], -queries[:1]])  # the last row is the worst match of every query near q0
    doc_ids = ["d0", "d1#1", "d1", "not-in-corpus", "d9"]  # a document id, a chunk id, a document, a foreign id
    database = lancedb.connect(tmp_path / "team")
    database.create_table("docs", pa.table({"key": doc_ids, "emb": pa.FixedSizeListArray.from_arrays(
        pa.array(team.reshape(-1)), team.shape[1])}))
    collection = vdb.Collection(uri=str(tmp_path / "team"), name="docs", id_field="key", vector_field="emb",
                                metric="cosine")
    files = sorted((tmp_path / "team").rglob("*"))
    table = vdb.open_table(collection, "test")
    ids, scores = vdb.search_table(table, queries[:2], 10, collection=collection)
    assert ids.shape == (2, 5)
    run = vdb.run_from_ids(QIDS[:2], ids, scores, chunks, 10)
    truth = np.argsort(-(queries[:2] @ team.T), axis=1, kind="stable")
    assert run[run["qid"] == "q0"]["chunk_id"].tolist() == [doc_ids[i] for i in truth[0]]
    known = dict(zip(run["chunk_id"], run["doc_id"]))
    assert known == {"d0": "d0", "d1#1": "d1", "d1": "d1", "not-in-corpus": "not-in-corpus", "d9": "d9"}
    with caplog.at_level(logging.INFO):
        report_unknown_documents(run, chunks["doc_id"], "team", "lance-team")
    assert "2 of 10 results of team name a document that is not in the corpus" in caplog.text
    assert sorted((tmp_path / "team").rglob("*")) == files and table.version == 1  # only read


def _check(spec: dict, tmp_path: Path) -> None:
    vdb.check_vectordb_method({"type": "vectordb", "engine": "lancedb", "encoder": "minilm", **spec}, {},
                              "methods.lance", str(tmp_path / "config.yaml"))


def test_bad_settings_fail_at_start_naming_the_key(corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vectors, _, chunks = corpus
    _table(vectors, chunks, tmp_path)
    with pytest.raises(InputError, match=r"methods.lance.engine: names engine 'chroma'.*Use one of: lancedb"):
        _check({"engine": "chroma"}, tmp_path)
    with pytest.raises(InputError, match=r"methods.lance.collection.uri: .*is not an existing folder"):
        _check({"collection": {"uri": str(tmp_path / "absent"), "name": "chunks"}}, tmp_path)
    with pytest.raises(InputError, match=r"methods.lance.collection.name: names table 'docs'.*Use one of: chunks"):
        _check({"collection": {"uri": str(tmp_path / "c.lancedb"), "name": "docs"}}, tmp_path)
    with pytest.raises(InputError, match=r"collection.vector_field: names column 'emb'.*it has id, vector"):
        _check({"collection": {"uri": str(tmp_path / "c.lancedb"), "name": "chunks", "vector_field": "emb"}},
               tmp_path)
    with pytest.raises(InputError, match=r"methods.lance.vector_index: is set beside `collection`"):
        _check({"collection": {"uri": str(tmp_path / "c.lancedb"), "name": "chunks"},
                "vector_index": {"kind": "ivf_pq"}}, tmp_path)
    _check({"collection": {"uri": str(tmp_path / "c.lancedb"), "name": "chunks"}}, tmp_path)
    monkeypatch.setattr(vdb.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match=r"needs lancedb, which is not installed.*rankbench\[vectordb\]"):
        _check({}, tmp_path)


def test_pq_sub_vectors_must_divide_the_dimension(corpus, tmp_path: Path) -> None:
    vectors, _, chunks = corpus
    with pytest.raises(InputError, match="5 does not divide the dimension 24"):
        _table(vectors, chunks, tmp_path, vdb.VectorIndex(kind="ivf_pq", sub_vectors=5))


def test_hnsw_explores_at_least_k_candidates(corpus, tmp_path: Path) -> None:
    """LanceDB refuses an HNSW search with ef < k; the method explores max(ef, k), as the FAISS HNSW method does."""
    vectors, queries, chunks = corpus
    index = vdb.VectorIndex(kind="ivf_hnsw_sq", partitions=2, nprobes=2, ef=10)
    ids, _ = vdb.search_table(_table(vectors, chunks, tmp_path, index), queries, 100, index)
    assert ids.shape == (30, 100) and all(value is not None for value in ids.reshape(-1))
