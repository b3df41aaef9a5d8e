"""The sentence-transformers kind: a local or hub-cached bi-encoder run in-process."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from rankbench.retrieval.encoders.base import PROGRESS_BAR_FROM, EncoderSpec, resolve_model_path, unit_vectors


class SentenceTransformerEncoder:
    """A sentence-transformers bi-encoder loaded offline; batches are length-sorted by the library."""

    def __init__(self, spec: EncoderSpec, device: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.spec = spec
        self.model = SentenceTransformer(resolve_model_path(spec.model, spec.revision), device=device)

    def _encode(self, texts: Sequence[str], prefix: str, batch_size: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_embedding_dimension() or 0), dtype=np.float32)
        vectors = self.model.encode([prefix + text for text in texts], batch_size=batch_size,
                                    normalize_embeddings=True, convert_to_numpy=True,
                                    show_progress_bar=len(texts) > PROGRESS_BAR_FROM)
        return unit_vectors(vectors.reshape(len(texts), -1))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.query_prefix, 1)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.passage_prefix, self.spec.batch_size)
