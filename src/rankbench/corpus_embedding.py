"""Corpus embedding at scale: contiguous shards (the unit a cluster schedules) and a content cache, so an edited
corpus re-encodes only the chunks whose text changed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.encoders import Encoder
from rankbench.files import write_npy, write_text

DEFAULT_SHARDS = 1


def shard_bounds(n_rows: int, shards: int, shard: int) -> tuple[int, int]:
    """Rows [start, stop) of shard `shard` of `shards`: contiguous, sizes differing by at most one (as
    numpy.array_split), so the same corpus always splits the same way."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is outside 0..{shards - 1}")
    size, extra = divmod(n_rows, shards)
    start = shard * size + min(shard, extra)
    return start, start + size + (shard < extra)


def text_hashes(texts: Sequence[str]) -> np.ndarray:
    """SHA-256 digest of each text (32 bytes each): the cache key of a chunk's vector under one encoder."""
    return np.array([hashlib.sha256(text.encode("utf-8")).digest() for text in texts], dtype="S32")


def cache_key(encoder: Mapping[str, Any]) -> str:
    """The encoder settings a cached vector depends on, as canonical JSON (vectors of other settings never match)."""
    return json.dumps(dict(sorted(encoder.items())), sort_keys=True)


def load_cache(folder: str | Path, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Hashes and (memory-mapped) vectors of a cache written for the same encoder settings; empty when absent,
    stale or half-written."""
    folder = Path(folder)
    key_file = folder / "key.json"
    if key_file.exists() and key_file.read_text(encoding="utf-8") == key:
        return np.load(folder / "hashes.npy"), np.load(folder / "vectors.npy", mmap_mode="r")
    return np.zeros(0, dtype="S32"), np.zeros((0, 0), dtype=np.float32)


def save_cache(folder: str | Path, key: str, hashes: np.ndarray, vectors: np.ndarray) -> None:
    """Write the cache; its key goes last, so a job killed mid-way leaves a cache that load_cache ignores."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "key.json").unlink(missing_ok=True)
    write_npy(hashes, folder / "hashes.npy")
    write_npy(vectors, folder / "vectors.npy")
    write_text(key, folder / "key.json")


def embed_passages(encoder: Encoder, texts: Sequence[str], cached_hashes: np.ndarray, cached_vectors: np.ndarray
                   ) -> tuple[np.ndarray, int]:
    """Vectors of the passages, taking those whose text hash is in the cache and encoding only the others
    (in one call, so the encoder batches them as usual); returns the vectors and how many were encoded."""
    hashes = text_hashes(texts)
    order = np.argsort(cached_hashes)
    found = np.searchsorted(cached_hashes[order], hashes).clip(max=max(len(cached_hashes) - 1, 0))
    hit = cached_hashes[order][found] == hashes if len(cached_hashes) else np.zeros(len(hashes), dtype=bool)
    missing = np.flatnonzero(~hit)
    encoded = encoder.encode_passages([texts[i] for i in missing])
    if not hit.any():
        return encoded, len(missing)
    vectors = np.zeros((len(texts), cached_vectors.shape[1]), dtype=np.float32)
    vectors[hit] = cached_vectors[order[found[hit]]]
    vectors[missing] = encoded
    return vectors, len(missing)
