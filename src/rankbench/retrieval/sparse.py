"""Learned sparse retrieval (SPLADE family) on sentence-transformers' SparseEncoder: chunks and questions become
weights over the model's vocabulary, and a chunk's score is the dot product of the two.

The index is the chunks' term-weight matrix (CSR, chunks x vocabulary) with the vocabulary, in one reproducible
.npz; queries are a CSR matrix of the same width. scipy and torch are imported where used: the workflow imports
this module (SparseEncoderSpec) when it parses.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rankbench.corpus.filters import ChunkMasks
from rankbench.errors import InputError
from rankbench.io.files import write_npz
from rankbench.retrieval.encoders import DEVICES, resolve_device, resolve_model_path
from rankbench.retrieval.registry import SPARSE_ENCODER_KIND
from rankbench.retrieval.vector_checks import checked_vectors

if TYPE_CHECKING:
    from scipy import sparse
    from sentence_transformers import SparseEncoder

QUERY_BLOCK = 256  # questions scored together: a block's scores are one sparse (block x chunks) product


@dataclass(frozen=True)
class SparseEncoderSpec:
    """An `encoders.<name>` block of kind sparse: a SparseEncoder model folder (SPLADE, or an inference-free model
    whose query side is a weight table), its document batch size and device (auto: CUDA when torch sees a GPU)."""

    kind: str = SPARSE_ENCODER_KIND
    model: str = ""
    revision: str | None = None
    batch_size: int = 32
    device: str = "auto"

    def __post_init__(self) -> None:
        if self.kind != SPARSE_ENCODER_KIND:
            raise ValueError(f"a sparse encoder has kind {SPARSE_ENCODER_KIND!r}, not {self.kind!r}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; use one of {', '.join(DEVICES)}")


def load_sparse_encoder(spec: SparseEncoderSpec) -> SparseEncoder:
    """The SparseEncoder of a spec, loaded offline (a folder, or a hub id's cached snapshot) on the spec's device."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SparseEncoder

    return SparseEncoder(resolve_model_path(spec.model, spec.revision), device=resolve_device(spec.device))


def vocabulary(model: SparseEncoder) -> np.ndarray:
    """The tokenizer's vocabulary in id order (stored with the index, to check queries against). Its length, not
    get_embedding_dimension (the MLM's hidden size on a freshly loaded SPLADE model), is the vectors' width."""
    return np.asarray(model.tokenizer.convert_ids_to_tokens(list(range(len(model.tokenizer)))), dtype=str)


def encode(model: SparseEncoder, texts: Sequence[str], is_query: bool, batch_size: int) -> sparse.csr_matrix:
    """Term weights of texts (rows) over the vocabulary, float32 CSR. Questions are encoded one at a time, so a
    question's vector never depends on the questions beside it in a batch (padding moves the last digits)."""
    from scipy import sparse

    if not texts:
        return sparse.csr_matrix((0, len(model.tokenizer)), dtype=np.float32)
    encode_texts = model.encode_query if is_query else model.encode_document
    tensor = encode_texts(list(texts), batch_size=1 if is_query else batch_size, convert_to_tensor=True,
                          convert_to_sparse_tensor=True, save_to_cpu=True).coalesce()
    rows, columns = tensor.indices().numpy()
    matrix = sparse.csr_matrix((tensor.values().float().numpy(), (rows, columns)), shape=tuple(tensor.shape),
                               dtype=np.float32)
    matrix.eliminate_zeros()
    matrix.sort_indices()
    # a text without a weighted term (possible for an inference-free query) is an empty row, not an error
    return checked_vectors(matrix, len(texts), "sparse encoder", zero_rows=True)


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
    chunk tied with the k-th score is kept, so io.runs.run_from_topk cuts at k in trec_eval's order (score, then
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
