"""Embedding at scale: contiguous corpus shards (the unit a cluster schedules) and a content cache, so an edited
corpus re-encodes only the chunks whose text changed and a new question-set version only its new questions."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.io.files import write_npy
from rankbench.retrieval.encoders.base import Encoder


def shard_bounds(n_rows: int, shards: int, shard: int) -> tuple[int, int]:
    """Rows [start, stop) of shard `shard` of `shards`: contiguous, sizes differing by at most one (as
    numpy.array_split), so the same corpus always splits the same way."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is outside 0..{shards - 1}")
    size, extra = divmod(n_rows, shards)
    start = shard * size + min(shard, extra)
    return start, start + size + (shard < extra)


def text_hashes(texts: Sequence[str]) -> np.ndarray:
    """SHA-256 digest of each text (32 bytes each): the cache key of a text's vector under one encoder."""
    return np.array([hashlib.sha256(text.encode("utf-8")).digest() for text in texts], dtype="S32")


def cache_key(encoder: Mapping[str, Any]) -> str:
    """The encoder settings a cached vector depends on, as canonical JSON (vectors of other settings never match).
    Unset settings (None) are left out, so a new optional setting keeps the caches of encoders that do not use it."""
    return json.dumps({key: value for key, value in sorted(encoder.items()) if value is not None}, sort_keys=True)


def _key_digest(key: str) -> str:
    """The prefix of a cache file's name: which encoder settings its vectors belong to."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _cache_files(folder: Path, key: str) -> list[Path]:
    """The cache's files for one encoder setting, in name order (hidden files are other writers' temporary ones)."""
    return sorted(folder.glob(f"{_key_digest(key)}-*.npy"))


def load_cache(folder: str | Path, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Hashes and vectors cached under the same encoder settings (memory-mapped when they are in one file, as the
    corpus cache always is); empty when there are none."""
    parts = [np.load(path, mmap_mode="r") for path in _cache_files(Path(folder), key)]
    if not parts:
        return np.zeros(0, dtype="S32"), np.zeros((0, 0), dtype=np.float32)
    if len(parts) == 1:
        return parts[0]["hash"], parts[0]["vector"]
    return np.concatenate([part["hash"] for part in parts]), np.concatenate([part["vector"] for part in parts])


def save_cache(folder: str | Path, key: str, hashes: np.ndarray, vectors: np.ndarray, replace: bool) -> None:
    """Add these vectors to the cache as one file of (hash, vector) records, renamed into place whole, so readers
    and concurrent writers never see a partial cache. `replace` drops every other file of the folder: the corpus
    cache holds the latest corpus only, while the query cache keeps the questions of every version."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    name = None
    if len(hashes):
        records = np.zeros(len(hashes), dtype=[("hash", "S32"), ("vector", np.float32, (vectors.shape[1],))])
        records["hash"], records["vector"] = hashes, vectors
        name = f"{_key_digest(key)}-{hashlib.sha256(hashes.tobytes()).hexdigest()[:16]}.npy"
        write_npy(records, folder / name)
    if replace:
        for path in folder.iterdir():
            if path.name != name and not path.name.startswith("."):
                path.unlink(missing_ok=True)


def embed_cached(encode: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str], cached_hashes: np.ndarray,
                  cached_vectors: np.ndarray) -> tuple[np.ndarray, int]:
    """Vectors of the texts, taking those whose text hash is in the cache and encoding only the others
    (in one call, so the encoder batches them as usual); returns the vectors and how many were encoded."""
    hashes = text_hashes(texts)
    order = np.argsort(cached_hashes, kind="stable")
    found = np.searchsorted(cached_hashes[order], hashes).clip(max=max(len(cached_hashes) - 1, 0))
    hit = cached_hashes[order][found] == hashes if len(cached_hashes) else np.zeros(len(hashes), dtype=bool)
    missing = np.flatnonzero(~hit)
    encoded = encode([texts[int(i)] for i in missing])
    if not hit.any():
        return encoded, len(missing)
    vectors = np.zeros((len(texts), cached_vectors.shape[1]), dtype=np.float32)
    vectors[hit] = cached_vectors[order[found[hit]]]
    if len(missing):  # an API encoder cannot know its dimension without a request: it returns (0, 0) for none
        vectors[missing] = encoded
    return vectors, len(missing)


def embed_passages(encoder: Encoder, texts: Sequence[str], cached_hashes: np.ndarray, cached_vectors: np.ndarray
                   ) -> tuple[np.ndarray, int]:
    """Passage vectors through the cache (see embed_cached)."""
    return embed_cached(encoder.encode_passages, texts, cached_hashes, cached_vectors)


def embed_queries(encoder: Encoder, texts: Sequence[str], cached_hashes: np.ndarray, cached_vectors: np.ndarray
                  ) -> tuple[np.ndarray, int]:
    """Query vectors through the cache (see embed_cached): a new version encodes only its new questions."""
    return embed_cached(encoder.encode_queries, texts, cached_hashes, cached_vectors)
