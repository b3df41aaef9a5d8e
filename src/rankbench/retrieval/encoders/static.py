"""Static-embedding encoders (model2vec): a token-vector lookup and mean per text, no transformer at run time, so a
million passages embed in minutes on two CPU cores."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from rankbench.io.progress import Progress, blocks
from rankbench.retrieval.encoders.base import EncoderSpec, resolve_model_path, unit_vectors
from rankbench.retrieval.vector_checks import checked_vectors


class StaticEncoder:
    """A model2vec StaticModel loaded from a local folder or a hub id's cached snapshot (never downloaded). A text's
    vector is the mean of its tokens' vectors and never depends on the batch, so queries are encoded together too."""

    def __init__(self, spec: EncoderSpec) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from model2vec import StaticModel

        self.spec = spec
        self.model = StaticModel.from_pretrained(resolve_model_path(spec.model, spec.revision),
                                                force_download=False)

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        texts = [prefix + text for text in texts]
        vectors = np.zeros((len(texts), self.model.dim), dtype=np.float32)
        with Progress(len(texts), f"encode {len(texts)} texts (static)", "texts") as progress:
            for part in blocks(len(texts), self.spec.batch_size):  # a text's vector never depends on its batch
                encoded = self.model.encode(texts[part.start:part.stop], batch_size=self.spec.batch_size,
                                            use_multiprocessing=False)
                # a text without a known token has no vector: it stays a zero row, as model2vec gives it
                vectors[part.start:part.stop] = checked_vectors(encoded, len(part), f"static encoder {self.spec.model}",
                                                                self.model.dim, zero_rows=True)
                progress.update(len(part))
        return unit_vectors(vectors)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.query_prefix)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.passage_prefix)
