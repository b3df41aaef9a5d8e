"""Embedding at scale: contiguous corpus shards (the unit a cluster schedules) and a content cache, so an edited
corpus re-encodes only the chunks whose text changed and a new question-set version only its new questions."""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.errors import InputError
from rankbench.retrieval.encoders.base import Encoder
from rankbench.retrieval.vector_checks import checked_vectors

JOURNAL = ".journal"
JOURNAL_MAGIC = b"RBVJ1"  # then the dimension (uint32), then whole (hash, vector) records


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


def _records(dimension: int) -> np.dtype:
    """A cached vector: its text's hash and the vector."""
    return np.dtype([("hash", "S32"), ("vector", np.float32, (dimension,))])


def _read_part(path: Path) -> np.ndarray:
    """The records of one cache file (memory-mapped), checked whole: a truncated or foreign file, or one holding a
    vector that is not finite, raises ValueError."""
    if path.suffix == JOURNAL:
        return read_journal(path)
    records = np.load(path, mmap_mode="r")
    if records.dtype.names != ("hash", "vector") or records["vector"].ndim != 2 \
            or records.dtype != _records(records["vector"].shape[1]):
        raise ValueError(f"holds {records.dtype}, not cached vectors")
    _check_finite(records["vector"])
    return records


def _check_finite(vectors: np.ndarray, block: int = 1 << 16) -> None:
    """ValueError if a cached vector is not finite (checked in blocks: the corpus cache may be gigabytes)."""
    for start in range(0, len(vectors), block):
        if not np.isfinite(vectors[start:start + block]).all():
            raise ValueError("holds a vector that is not finite")


def load_cache(folder: str | Path, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Hashes and vectors cached under the same encoder settings (memory-mapped when they are in one file, as the
    corpus cache always is); empty when there are none. A corrupt file (truncated by a full disk, say) is named in a
    warning and removed, so its vectors are encoded again: a cache is never trusted blindly."""
    folder = Path(folder)
    parts = []
    for path in sorted(_cache_files(folder, key) + journal_files(folder, key)):
        try:
            parts.append(_read_part(path))
        except FileNotFoundError:
            continue  # a journal its writer just folded into a cache file
        except (ValueError, OSError, EOFError) as error:
            logging.warning("cache file %s is corrupt (%s): removed; its vectors are encoded again", path, error)
            path.unlink(missing_ok=True)
    parts = [part for part in parts if len(part)]
    if not parts:
        return np.zeros(0, dtype="S32"), np.zeros((0, 0), dtype=np.float32)
    dimensions = sorted({part["vector"].shape[1] for part in parts})
    if len(dimensions) > 1:
        raise InputError(folder, None, f"holds vectors of {' and '.join(map(str, dimensions))} dimensions for one "
                         "encoder setting (the model behind it changed)",
                         "Delete this folder: its vectors are encoded again.")
    if len(parts) == 1:
        return parts[0]["hash"], parts[0]["vector"]
    return np.concatenate([part["hash"] for part in parts]), np.concatenate([part["vector"] for part in parts])


def cached_dimension(folder: str | Path, key: str) -> int | None:
    """The dimension of the vectors cached under these settings (read from a file's header), None if none are."""
    for path in sorted(_cache_files(Path(folder), key) + journal_files(Path(folder), key)):
        try:
            if path.suffix == JOURNAL:
                header = path.read_bytes()[:len(JOURNAL_MAGIC) + 4]
                return struct.unpack_from("<I", header, len(JOURNAL_MAGIC))[0] if len(header) == 9 else None
            return int(np.load(path, mmap_mode="r")["vector"].shape[1])
        except (ValueError, OSError, EOFError, KeyError, IndexError, struct.error):
            continue  # corrupt: load_cache names and removes it
    return None


def journal_files(folder: Path, key: str) -> list[Path]:
    """The journals of one encoder setting: vectors an API encoder appended as they arrived."""
    return sorted(folder.glob(f"{_key_digest(key)}-*{JOURNAL}"))


class Journal:
    """An append-only file of the vectors received so far, one write per batch, so a job killed at any point (kill
    -9 too) keeps every batch that arrived; a reader takes its whole records only. `close` folds it into an ordinary
    cache file."""

    def __init__(self, folder: str | Path, key: str) -> None:
        self.folder, self.key = Path(folder), key
        self.path = self.folder / f"{_key_digest(key)}-{uuid.uuid4().hex[:16]}{JOURNAL}"
        self.hashes: list[np.ndarray] = []
        self.vectors: list[np.ndarray] = []

    def append(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Add the vectors of these texts (one write; the header first, when the file is new)."""
        records = np.zeros(len(texts), dtype=_records(vectors.shape[1]))
        records["hash"], records["vector"] = text_hashes(texts), vectors
        header = b"" if self.hashes else JOURNAL_MAGIC + struct.pack("<I", vectors.shape[1])
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as handle:
            handle.write(header + records.tobytes())
        self.hashes.append(records["hash"])
        self.vectors.append(records["vector"])

    def close(self) -> None:
        """Fold the journal into one cache file (written whole), then remove it."""
        if self.hashes:
            save_cache(self.folder, self.key, np.concatenate(self.hashes), self.vectors, replace=False)
        self.path.unlink(missing_ok=True)


def read_journal(path: Path) -> np.ndarray:
    """The whole records of a journal (a record cut short by a kill is left out); ValueError if it is no journal."""
    data = path.read_bytes()
    if len(data) < len(JOURNAL_MAGIC) + 4:  # created, header not yet written
        return np.zeros(0, dtype=_records(0))
    if not data.startswith(JOURNAL_MAGIC):
        raise ValueError("is not a journal of vectors")
    (dimension,) = struct.unpack_from("<I", data, len(JOURNAL_MAGIC))
    body = memoryview(data)[len(JOURNAL_MAGIC) + 4:]
    dtype = _records(dimension)
    records = np.frombuffer(body[:len(body) // dtype.itemsize * dtype.itemsize], dtype=dtype)
    _check_finite(records["vector"])
    return records


def save_cache(folder: str | Path, key: str, hashes: np.ndarray, vectors: np.ndarray | Iterable[np.ndarray],
               replace: bool) -> None:
    """Add these vectors (one array, or its rows in blocks; in the order of `hashes`) to the cache as one file of (hash,
    vector) records, renamed into place whole, so readers and concurrent writers never see a partial cache.
    `replace` drops every other file of the folder: the corpus cache holds the latest corpus only, while the query
    cache keeps the questions of every version."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    name = None
    if len(hashes):
        name = f"{_key_digest(key)}-{hashlib.sha256(hashes.tobytes()).hexdigest()[:16]}.npy"
        blocks = [vectors] if isinstance(vectors, np.ndarray) else vectors
        from rankbench.io.files import write_npy_rows  # pandas: not for `rankbench run`, which reads the kinds table

        write_npy_rows(_record_blocks(hashes, blocks), len(hashes), folder / name)
    if replace:
        for path in folder.iterdir():
            if path.name != name and not path.name.startswith("."):
                path.unlink(missing_ok=True)


def _record_blocks(hashes: np.ndarray, vector_blocks: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
    """(hash, vector) records of each block of vectors, the hashes taken in order."""
    start = 0
    for vectors in vector_blocks:
        records = np.zeros(len(vectors), dtype=_records(vectors.shape[1]))
        records["hash"], records["vector"] = hashes[start:start + len(vectors)], vectors
        start += len(vectors)
        yield records


def embed_cached(encode: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str], cached_hashes: np.ndarray,
                  cached_vectors: np.ndarray) -> tuple[np.ndarray, int]:
    """Vectors of the texts, taking those whose text hash is in the cache and encoding only the others
    (in one call, so the encoder batches them as usual); returns the vectors and how many were encoded."""
    hashes = text_hashes(texts)
    order = np.argsort(cached_hashes, kind="stable")
    found = np.searchsorted(cached_hashes[order], hashes).clip(max=max(len(cached_hashes) - 1, 0))
    hit = cached_hashes[order][found] == hashes if len(cached_hashes) else np.zeros(len(hashes), dtype=bool)
    missing = np.flatnonzero(~hit)
    if not hit.any():
        return encode([texts[int(i)] for i in missing]), len(missing)
    vectors = np.zeros((len(texts), cached_vectors.shape[1]), dtype=np.float32)
    vectors[hit] = cached_vectors[order[found[hit]]]
    if not len(missing):
        return vectors, 0  # the encoder is not called: an on-demand one (kinds.OnDemandEncoder) never loads
    encoded = encode([texts[int(i)] for i in missing])
    vectors[missing] = checked_vectors(encoded, len(missing), "the encoder (against its cached vectors: a model "
                                       "changed behind the same name? Then delete the cache)", cached_vectors.shape[1])
    return vectors, len(missing)


def load_caches(folders: Sequence[str | Path], key: str) -> tuple[np.ndarray, np.ndarray]:
    """The vectors cached under one encoder setting in several folders (every chunker's corpus cache): a text any
    chunker has embedded is not encoded again. Folders whose vectors have another dimension are skipped (their model
    changed; their own job re-encodes them)."""
    parts = [part for part in (load_cache(folder, key) for folder in folders) if len(part[0])]
    if not parts:
        return np.zeros(0, dtype="S32"), np.zeros((0, 0), dtype=np.float32)
    dimension = parts[0][1].shape[1]
    parts = [part for part in parts if part[1].shape[1] == dimension]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([hashes for hashes, _ in parts]), np.concatenate([vectors for _, vectors in parts])


def embed_passages(encoder: Encoder, texts: Sequence[str], cached_hashes: np.ndarray, cached_vectors: np.ndarray
                   ) -> tuple[np.ndarray, int]:
    """Passage vectors through the cache (see embed_cached)."""
    return embed_cached(encoder.encode_passages, texts, cached_hashes, cached_vectors)


def embed_queries(encoder: Encoder, texts: Sequence[str], cached_hashes: np.ndarray, cached_vectors: np.ndarray
                  ) -> tuple[np.ndarray, int]:
    """Query vectors through the cache (see embed_cached): a new version encodes only its new questions."""
    return embed_cached(encoder.encode_queries, texts, cached_hashes, cached_vectors)
