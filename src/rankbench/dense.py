"""Exact dense retrieval with FAISS inner product over normalized vectors (= cosine)."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np


def build_flat_index(vectors: np.ndarray) -> faiss.Index:
    """Exact inner-product index: the reference for evaluation."""
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def save_index(index: faiss.Index, path: Path) -> None:
    """Write a FAISS index through a temporary file, so a killed job leaves no half-written index."""
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    faiss.write_index(index, str(tmp))
    tmp.replace(path)


def load_index(path: Path) -> faiss.Index:
    """Read a FAISS index written by save_index."""
    return faiss.read_index(str(path))


def search(index: faiss.Index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k positions and scores per query; positions are -1 where the index has fewer than k vectors."""
    k = min(k, index.ntotal)
    scores, positions = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
    return positions, scores
