"""What serving a method takes (records/footprint.py): bytes and dimensions read from real FAISS indexes, arrays and
folders built here, and money per 1,000 questions checked by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rankbench.errors import InputError
from rankbench.records.footprint import FOOTPRINT_COLUMNS, Spend, file_size, footprint, read_spends, spend_of
from rankbench.retrieval.dense import IndexSpec, build_index, load_index, save_index

N, DIM = 600, 384


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    rng = np.random.default_rng(0)
    found = rng.standard_normal((N, DIM)).astype(np.float32)
    return found / np.linalg.norm(found, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory, vectors: np.ndarray) -> dict[str, Path]:
    """The compression grid's indexes (and a few approximate ones) over the same vectors, with the float vectors."""
    folder = tmp_path_factory.mktemp("faiss")
    specs = {"float": IndexSpec(), "int8": IndexSpec(quantization="int8"), "binary": IndexSpec(quantization="binary"),
             "d128": IndexSpec(dimensions=128), "d256": IndexSpec(dimensions=256),
             "d256-int8": IndexSpec(dimensions=256, quantization="int8"),
             "d128-binary": IndexSpec(dimensions=128, quantization="binary"),
             "hnsw": IndexSpec(kind="hnsw"), "ivf": IndexSpec(kind="ivf", nlist=4),
             "ivf-int8": IndexSpec(kind="ivf", nlist=4, quantization="int8"),
             "ivf-binary": IndexSpec(kind="ivf", nlist=4, quantization="binary"),
             "pq": IndexSpec(quantization="pq", pq_m=8, pq_nbits=4)}
    paths = {}
    for name, spec in specs.items():
        paths[name] = folder / f"{name}.faiss"
        save_index(build_index(vectors, spec), paths[name])
    paths["vectors"] = folder / "vectors.npy"
    np.save(paths["vectors"], vectors)
    return paths


EXPECTED_DIMENSIONS = {"float": 384, "int8": 384, "binary": 384, "d128": 128, "d256": 256, "d256-int8": 256,
                       "d128-binary": 128, "hnsw": 384, "ivf": 384, "ivf-int8": 384, "ivf-binary": 384, "pq": 384}


@pytest.mark.parametrize("name", sorted(EXPECTED_DIMENSIONS))
def test_dimensions_are_the_searched_index_s_as_faiss_reads_them(indexes: dict[str, Path], name: str) -> None:
    size = file_size(indexes[name])
    assert size.dimensions == EXPECTED_DIMENSIONS[name] == load_index(indexes[name]).d
    assert size.disk == size.ram == indexes[name].stat().st_size


def test_compressed_indexes_count_their_codes_not_the_float_vectors_they_were_built_from(
        indexes: dict[str, Path]) -> None:
    served = {"float": [indexes["float"]], "int8": [indexes["int8"]], "binary": [indexes["binary"]],
              "binary-rescored": [indexes["binary"], indexes["vectors"]],
              "d128": [indexes["d128"]], "d256": [indexes["d256"]],
              "d128-binary-rescored": [indexes["d128-binary"], indexes["vectors"]]}
    table = footprint(served).set_index("method")
    assert list(footprint(served).columns) == FOOTPRINT_COLUMNS
    float_ram = table.loc["float", "ram_bytes"]
    assert float_ram >= N * DIM * 4
    assert table.loc["int8", "ram_bytes"] <= 0.3 * float_ram
    assert table.loc["binary", "ram_bytes"] <= 0.05 * float_ram
    # a re-scored index holds the float vectors it reads too: N × 384 floats beside its codes
    assert table.loc["binary-rescored", "ram_bytes"] == table.loc["binary", "ram_bytes"] + N * DIM * 4
    assert table.loc["binary-rescored", "disk_bytes"] == (indexes["binary"].stat().st_size
                                                          + indexes["vectors"].stat().st_size)
    assert table.loc["binary-rescored", "dimensions"] == 384
    assert table.loc["d128-binary-rescored", "dimensions"] == 128  # the float vectors are cut alike to re-score
    assert table.loc["d128", "dimensions"] == 128 and table.loc["d256", "dimensions"] == 256
    assert table.loc["d128", "ram_bytes"] == pytest.approx(float_ram / 3, rel=0.01)
    assert table["usd_per_1k"].isna().all()


def test_arrays_folders_and_shared_files(tmp_path: Path, indexes: dict[str, Path]) -> None:
    """An .npz counts its arrays uncompressed in memory; a folder every file under it; a file two inputs of a fusion
    share counts once; a method served elsewhere (no file) has no bytes."""
    arrays = {"scores": np.arange(1000, dtype=np.float32), "ids": np.zeros((50, 3), dtype=np.int64)}
    np.savez_compressed(tmp_path / "bm25.npz", **arrays)
    lucene = tmp_path / "lucene"
    (lucene / "sub").mkdir(parents=True)
    (lucene / "a.cfs").write_bytes(b"x" * 1000)
    (lucene / "sub" / "b.si").write_bytes(b"y" * 234)
    table = footprint({"bm25": [tmp_path / "bm25.npz"], "lucene": [lucene], "http": [],
                       "rrf": [tmp_path / "bm25.npz", indexes["d128"], tmp_path / "bm25.npz"],
                       "rerank": [indexes["vectors"]]}).set_index("method")
    with np.load(tmp_path / "bm25.npz") as npz:
        assert table.loc["bm25", "ram_bytes"] == sum(npz[name].nbytes for name in npz.files) == 4000 + 1200
    assert table.loc["bm25", "disk_bytes"] == (tmp_path / "bm25.npz").stat().st_size
    assert np.isnan(table.loc["bm25", "dimensions"])
    assert table.loc["lucene", ["ram_bytes", "disk_bytes"]].tolist() == [1234, 1234]
    assert table.loc["http", ["ram_bytes", "disk_bytes", "dimensions"]].isna().all()
    assert table.loc["rrf", "ram_bytes"] == 5200 + indexes["d128"].stat().st_size
    assert table.loc["rrf", "dimensions"] == 128
    assert table.loc["rerank", "dimensions"] == 384  # a bi-encoder scorer's float vectors


def test_money_per_thousand_questions_checked_by_hand() -> None:
    """An embedding API: 50 questions, one request each, 600 tokens; an LLM reranker: 300 requests and 150,000
    tokens for 10 questions. Per question: 12 tokens and 1 request ($0.02 per 1M tokens, $0.0001 a request), and
    15,000 tokens and 30 requests ($0.50 per 1M, nothing a request)."""
    prices = {"emb-small": {"per_1m_input_tokens": 0.02, "per_request": 0.0001},
              "judge": {"per_1m_input_tokens": 0.5}}
    embed = Spend("emb-small", questions=50, requests=50, tokens=600)
    judge = Spend("judge", questions=10, requests=300, tokens=150_000)
    spends = {"dense-api": [embed], "rerank-llm": [embed, judge], "bm25": []}
    table = footprint({"dense-api": [], "rerank-llm": [], "bm25": []}, spends, prices).set_index("method")
    by_hand_dense = 1000 * (12 * 0.02 / 1e6 + 1 * 0.0001)  # 0.10024
    assert table.loc["dense-api", "usd_per_1k"] == pytest.approx(0.10024) == pytest.approx(by_hand_dense)
    assert table.loc["rerank-llm", "usd_per_1k"] == pytest.approx(0.10024 + 1000 * 15_000 * 0.5 / 1e6)  # + $7.50
    assert table.loc["rerank-llm", ["tokens_per_query", "requests_per_query"]].tolist() == [15_012, 31]
    assert table.loc["bm25", "usd_per_1k"] == 0.0
    assert footprint({"dense-api": []}, spends)["usd_per_1k"].isna().all()  # no price table: no money


def test_money_unknown_when_unpriced_unreported_or_unseen() -> None:
    prices = {"emb-small": {"per_1m_input_tokens": 0.02}}
    table = footprint({"a": [], "b": [], "c": []},
                      {"a": [Spend("other", 5, 5, 50)], "b": [Spend("emb-small", 5, 5, None)],
                       "c": [Spend("emb-small", 0, 0, 0)]}, prices).set_index("method")
    assert table["usd_per_1k"].isna().all()
    assert table.loc["a", "tokens_per_query"] == 10 and np.isnan(table.loc["b", "tokens_per_query"])
    assert np.isnan(table.loc["c", "requests_per_query"])


def test_a_broken_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match=r"x\.npz.*cannot be measured"):
        footprint({"m": [tmp_path / "x.npz"]})


def test_spends_from_the_records_a_run_keeps() -> None:
    """An API embedding job's usage record: one request per question sent; an in-process encoder's: none; an LLM
    reranker's timing record: its calls over its questions; one that sent nothing (all cached): unseen."""
    usage = {"texts": 27, "encoded": 20, "endpoint": "http://127.0.0.1:9/v1", "model": "emb-small", "requests": 1,
             "sent": 20, "tokens": 240}
    assert spend_of(None, usage) == Spend("emb-small", 20, 20, 240)
    assert spend_of(None, {**usage, "endpoint": None, "model": None, "sent": 0, "tokens": 0}) is None
    timing = {"questions": {"q1": 0.5, "q2": 0.7}, "once": {}, "calls": 60, "tokens": 9000, "cached": 0}
    assert spend_of("judge", timing) == Spend("judge", 2, 60, 9000)
    assert spend_of("judge", {**timing, "calls": 0, "tokens": 0}).questions == 0
    table = footprint({"m": []}, {"m": [spend_of("judge", {**timing, "calls": 0, "tokens": 0})]},
                      {"judge": {"per_request": 1.0}})
    assert table["usd_per_1k"].isna().all()


def test_spends_are_read_from_the_record_files(tmp_path: Path) -> None:
    (tmp_path / "q.usage.json").write_text('{"texts": 4, "encoded": 4, "endpoint": "http://h/v1", "model": "emb", '
                                           '"requests": 1, "sent": 4, "tokens": 40}')
    (tmp_path / "rerank.json").write_text('{"questions": {"a": 1.0}, "once": {}, "calls": 3, "tokens": 300}')
    (tmp_path / "broken.usage.json").write_text("{")
    spends = read_spends({"m": [[None, tmp_path / "q.usage.json"], ["judge", tmp_path / "rerank.json"]], "n": []})
    assert spends == {"m": [Spend("emb", 4, 4, 40), Spend("judge", 1, 3, 300)], "n": []}
    with pytest.raises(InputError, match=r"broken\.usage\.json.*not a usage record"):
        read_spends({"m": [[None, tmp_path / "broken.usage.json"]]})
