"""Learned sparse retrieval (SPLADE family): chunks and questions are weights over a model's vocabulary
(encoders/sparse.py), and a chunk's score is the dot product of the two.

The index is the chunks' term-weight matrix (CSR, chunks x vocabulary) with the vocabulary, in one reproducible
.npz; queries are a CSR matrix of the same width. scipy is imported where used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rankbench.corpus.filters import ChunkMasks
from rankbench.errors import InputError
from rankbench.io.files import write_npz

if TYPE_CHECKING:
    from scipy import sparse

QUERY_BLOCK = 256  # questions scored together: a block's scores are one sparse (block x chunks) product


def save_matrix(matrix: sparse.csr_matrix, vocab: np.ndarray, path: str | Path) -> None:
    """A CSR matrix and its vocabulary as one .npz, byte-identical for the same matrix (io.files.write_npz)."""
    write_npz({"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr,
               "shape": np.asarray(matrix.shape, dtype=np.int64), "vocab": vocab}, path)


def load_matrix(path: str | Path) -> tuple[sparse.csr_matrix, np.ndarray]:
    """A matrix and vocabulary written by save_matrix."""
    from scipy import sparse

    with np.load(path, allow_pickle=False) as npz:
        if not {"data", "indices", "indptr", "shape", "vocab"} <= set(npz.files):
            raise InputError(path, None, "is not a rankbench sparse matrix (a member is missing)",
                             "Delete it and rerun the rule that writes it.")
        matrix = sparse.csr_matrix((npz["data"], npz["indices"], npz["indptr"]), shape=tuple(npz["shape"]))
        return matrix, npz["vocab"]


def search(index: sparse.csr_matrix, queries: sparse.csr_matrix, k: int, allowed: ChunkMasks | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per question, the chunks (positions, -1 = none) and dot-product scores (float64) that may reach its top k.

    Only chunks sharing a weighted term with the question score; `allowed` removes chunks before the cut. Every
    chunk tied with the k-th score is kept, so io.ranked_lists.run_from_topk cuts at k in trec_eval's order (score, then
    id descending) whatever the positions: rows are as wide as the widest such list.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    if queries.shape[1] != index.shape[1]:
        raise ValueError(f"queries have {queries.shape[1]} dimensions, the index {index.shape[1]}: encoded with "
                         "another model")
    inverted = index.T.tocsr().astype(np.float64)  # vocabulary x chunks
    hits: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, queries.shape[0], QUERY_BLOCK):
        block = (queries[start:start + QUERY_BLOCK].astype(np.float64) @ inverted).tocsr()
        block.sort_indices()
        for offset in range(block.shape[0]):
            row = start + offset
            span = slice(block.indptr[offset], block.indptr[offset + 1])
            chunks, scores = block.indices[span], block.data[span]
            keep = scores > 0
            if allowed is not None:
                keep &= allowed.masks[allowed.group[row]][chunks]
            chunks, scores = chunks[keep], scores[keep]
            if len(chunks) > k:
                kth = -np.partition(-scores, k - 1)[k - 1]
                chunks, scores = chunks[scores >= kth], scores[scores >= kth]
            hits.append((chunks, scores))
    width = max([len(chunks) for chunks, _ in hits] + [1])
    positions = np.full((len(hits), width), -1, dtype=np.int64)
    scores_out = np.zeros((len(hits), width), dtype=np.float64)
    for row, (chunks, scores) in enumerate(hits):
        positions[row, :len(chunks)], scores_out[row, :len(chunks)] = chunks, scores
    return positions, scores_out
