"""The sparse kind: sentence-transformers' SparseEncoder (SPLADE family) turns chunks and questions into weights
over the model's vocabulary, as CSR matrices. scipy and torch are imported where used: the workflow imports this
module (SparseEncoderSpec) when it parses."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rankbench.retrieval.encoders.base import DEVICES, resolve_device, resolve_model_path
from rankbench.retrieval.vector_checks import checked_vectors

if TYPE_CHECKING:
    from scipy import sparse
    from sentence_transformers import SparseEncoder

KIND = "sparse"  # `encoders.<name>.kind` of these encoders


@dataclass(frozen=True)
class SparseEncoderSpec:
    """An `encoders.<name>` block of kind sparse: a SparseEncoder model folder (SPLADE, or an inference-free model
    whose query side is a weight table), its document batch size and device (auto: CUDA when torch sees a GPU)."""

    kind: str = KIND
    model: str = ""
    revision: str | None = None
    batch_size: int = 32
    device: str = "auto"

    def __post_init__(self) -> None:
        if self.kind != KIND:
            raise ValueError(f"a sparse encoder has kind {KIND!r}, not {self.kind!r}")
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
