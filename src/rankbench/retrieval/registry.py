"""The method types, one entry each: the config keys a type reads (with their defaults), its family, its inputs, the
rules that build its index, encode its texts and make its run, the models it loads and its own config checks.

Adding a method type = its module under retrieval/ (and thin workflow scripts, and its rules files under
workflow/rules/methods/), one `MethodType` entry here, the keys' JSON checks in workflow/schemas/config.schema.yaml,
and its docs in docs/reference/config.md (steps: docs/development.md, "Add a method type"). The config checks
(configuration/config.py), the effective config (configuration/defaults.py), the rules
(workflow/rules/method_tables.smk and methods/), the cost stages (configuration/rules.py), the models of provenance
and history (configuration/models.py), the failure analysis, the evaluation grains and the findings all read this
table, never a type's name. Its entry also declares which tables of workflow/rules/method_tables.smk the type's
helpers fill (REGISTRATIONS), checked at start by configuration/registrations.py. tests/retrieval/test_registry.py
keeps it and the schema in step (defaults included), and
tests/codebase/test_type_names.py fails where a type name is compared outside it and the type's own module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rankbench.retrieval.scorer_kinds import scorer_kind

# Family of a type -> the word the findings use for it ("bm25 (lexical)").
FAMILIES = {"lexical": "lexical", "dense": "dense", "sparse": "learned sparse", "fusion": "fusion",
            "rerank": "reranked", "external": "external"}
# Keys every method may set: what it is, what the pages say it is, the grid over its parameters and its abstention
# zones (how the calibration page and the gate read its scores).
STRUCTURAL_KEYS = ("type", "description", "grid", "abstention")
# Keys that change no run: a new value reruns no retrieval job and leaves the method's identity as it was.
REPORT_ONLY_KEYS = ("description", "abstention")
REQUIRED = object()  # the key has no default: the method must set it
OPTIONAL = None  # the key has no default: unset means the feature is off (e.g. no rewrite, no weights)
LIBRARY = object()  # the default is the library spec class's (BM25's k1, b, ...), filled by the type's `settings`

# Keys shared by several types, with their defaults.
_FIRST_STAGE: dict[str, Any] = {"chunker": OPTIONAL, "filters": [], "rewrite": OPTIONAL}
_FUSION: dict[str, Any] = {"inputs": REQUIRED, "weights": OPTIONAL}
# Defaults the library's functions (fusion.py) and the rules share with the registry (one literal each).
RRF_K = 60
NORMALIZATION = "minmax"
# Keys of `type: http` whose defaults are the library's (its preset's, else HttpSearchSpec's).
_SERVE_FUSION = "rankbench.retrieval.serving:serve_fusion"
HTTP_LIBRARY_KEYS = ("http_method", "params", "body", "headers", "version_header", "concurrency", "timeout",
                     "retries", "backoff")


@dataclass(frozen=True)
class IndexStage:
    """The rule that builds the index a type searches, and the wildcards its jobs are named by (of `chunker`,
    `encoder`, and the index's name as `method` or `index`)."""

    rule: str
    wildcards: tuple[str, ...]

    @property
    def named(self) -> bool:
        """Whether its jobs are named by the index's name (`method` or `index`): the type's helpers then owe
        `INDEX_NAMES[rule]`, the function naming a method's index."""
        return "method" in self.wildcards or "index" in self.wildcards


# The tables of workflow/rules/method_tables.smk that a type's helpers (workflow/rules/methods/<type>_common.smk)
# fill and the shared rules and pages read, -> what an entry is. A type owes `INDEX_NAMES[<its index rule>]` when its
# index is named (IndexStage.named) and the others its entry lists in `registers`; the workflow's start and
# `rankbench check` refuse a type whose helpers fill fewer or more (configuration/registrations.py).
REGISTRATIONS = {
    "INDEX_NAMES": "index rule -> the function naming the index a method searches",
    "INDEX_STATS": "method -> the size and build-time record of its index (every method building one)",
    "SERVED_FILES": "method -> the files its own query job reads to answer a question (the memory and disk to serve)",
    "INDEX_BLOCKS": "method -> the index block a chunker can yield too few chunks for",
    "ANN_RECALL_METHODS": "the methods searching an approximate or compressed index (a recall page each)",
    "VERSION_PAGES": "further pages of each version the type writes",
    "RERANKED_METHODS": "the methods whose scorer can fail (every method of the type)",
}
# Those a type's helpers fill for every method of it (for an index's: every one that builds it), not only some.
EVERY_METHOD = ("INDEX_STATS", "RERANKED_METHODS")


@dataclass(frozen=True)
class Encoding:
    """The rules that encode a type's texts with one of its encoders: the corpus (None: its index rule does), the
    questions, and the rewritten questions."""

    corpus: str | None
    queries: str
    rewritten_queries: str


# Dense vectors: the corpus once per (chunker, encoder); the questions once per version and rewrite source.
DENSE_ENCODING = Encoding("embed_corpus", "embed_queries", "embed_rewritten_queries")
# Sparse term weights: the questions once per version and rewrite source (the index rule encodes the corpus).
SPARSE_ENCODING = Encoding(None, "sparse_queries", "sparse_rewritten_queries")


@dataclass(frozen=True)
class MethodType:
    """One method type: its family, the config keys it reads (key -> default, REQUIRED, OPTIONAL or LIBRARY), which key
    names the runs it consumes, the grains its runs are scored at (external runs rank documents only), and
    `settings`, "module:function" of the library function that fills the defaults its own spec classes hold
    (e.g. BM25's k1 and b), imported only when the effective config is written. `run_rule` makes its run, `index`
    builds what it searches, `encoding` encodes its texts with its encoders (of the kinds that make term weights
    when `sparse_encoders`, else dense vectors: encoders/kinds.py); `check`, "module:function", checks a method of
    the type at start (called with the method's config, the dataset block with its defaults, the method's key and
    the config's source; it raises InputError). `existing_index` names the key that, when a method sets it, points
    to an index the method only reads (an existing vector-database collection): the workflow then builds no index
    and encodes no corpus for it. `engine`, "module:function", names the engine that answers a type's questions (a
    search engine, a database, a service) from the provenance its run file holds (called with that mapping; it
    returns the page header's and the history's entry, `methods.<name>.engine`). `modules` are what its jobs
    import, from the package extra `extra` (None: the extra of its encoders' kind, which brings them too);
    `rankbench check` and the workflow's start refuse a method whose modules are not installed. `renamed` maps a key
    the type once read to its new name and what that means, so a config still giving the old key is told the new.
    `registers` names the tables of REGISTRATIONS (other than INDEX_NAMES, owed by a named index) its helpers fill.
    `serve`, "module:function", builds the type's query path for the serving probe (retrieval/serving.py: called
    with a ServeSetup, it returns the path's Steps); a type without one is costed from the latencies its runs
    recorded (`measured: recorded` in serving.parquet)."""

    family: str
    keys: Mapping[str, Any] = field(default_factory=dict)
    inputs_key: str | None = None
    grains: tuple[str, ...] = ("document", "chunk")
    settings: str | None = None
    # Its encoders make vocabulary term weights (the sparse kinds of encoders/kinds.py), not dense vectors.
    sparse_encoders: bool = False
    run_rule: str = ""
    index: IndexStage | None = None
    encoding: Encoding = DENSE_ENCODING
    check: str | None = None
    existing_index: str | None = None
    engine: str | None = None
    modules: tuple[str, ...] = ()
    extra: str | None = None
    renamed: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    registers: tuple[str, ...] = ()
    serve: str | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown method family {self.family!r}; use one of {', '.join(FAMILIES)}")
        if not self.run_rule:
            raise ValueError("a method type needs `run_rule`, the rule that makes its runs")
        unknown = set(self.registers) - set(REGISTRATIONS) | set(self.registers) & {"INDEX_NAMES"}
        if unknown:
            raise ValueError(f"`registers` names {', '.join(sorted(unknown))}; use some of "
                             f"{', '.join(name for name in REGISTRATIONS if name != 'INDEX_NAMES')} (INDEX_NAMES is "
                             "owed by an index named by its `method` or `index` wildcard)")

    @property
    def owed(self) -> tuple[str, ...]:
        """The tables of REGISTRATIONS its helpers must fill: INDEX_NAMES for a named index, then `registers`."""
        return (("INDEX_NAMES",) if self.index and self.index.named else ()) + self.registers


METHOD_TYPES: dict[str, MethodType] = {
    "bm25": MethodType("lexical", {"variant": LIBRARY, "k1": LIBRARY, "b": LIBRARY, "delta": LIBRARY,
                                   "stopwords": LIBRARY, "stemming": LIBRARY, "fold_accents": LIBRARY,
                                   "backend": LIBRARY, "prf": OPTIONAL, "expansion": OPTIONAL, **_FIRST_STAGE},
                       settings="rankbench.retrieval.bm25:bm25_settings", run_rule="retrieve_bm25",
                       index=IndexStage("bm25_index", ("chunker", "method")),
                       check="rankbench.retrieval.bm25:check_bm25_method", modules=("bm25s", "Stemmer"),
                       extra="bm25", registers=("SERVED_FILES",),
                       serve="rankbench.retrieval.serving:serve_bm25"),
    # Lucene's own BM25 (and RM3) through Anserini's jar (retrieval/lucene.py).
    "lucene": MethodType("lexical", {"k1": LIBRARY, "b": LIBRARY, "analyzer": LIBRARY, "stemmer": LIBRARY,
                                     "stopwords": LIBRARY, "stemming": LIBRARY, "fold_accents": LIBRARY,
                                     "language": OPTIONAL, "prf": OPTIONAL, "jar": OPTIONAL, "java": OPTIONAL,
                                     "chunker": OPTIONAL, "rewrite": OPTIONAL},
                         settings="rankbench.retrieval.lucene:lucene_settings", run_rule="retrieve_lucene",
                         index=IndexStage("lucene_index", ("chunker", "method")),
                         check="rankbench.retrieval.lucene:check_lucene_method",
                         engine="rankbench.retrieval.lucene:engine_entry", registers=("SERVED_FILES",)),
    "dense": MethodType("dense", {"encoder": REQUIRED, "index": LIBRARY, "expansion": OPTIONAL, **_FIRST_STAGE},
                        settings="rankbench.retrieval.dense:dense_settings", run_rule="retrieve_dense",
                        check="rankbench.retrieval.dense:check_dense_method",
                        index=IndexStage("faiss_index", ("chunker", "encoder", "index")), modules=("faiss",),
                        registers=("INDEX_STATS", "SERVED_FILES", "INDEX_BLOCKS", "ANN_RECALL_METHODS",
                                   "VERSION_PAGES"),
                        serve="rankbench.retrieval.serving:serve_dense"),
    "sparse": MethodType("sparse", {"encoder": REQUIRED, **_FIRST_STAGE}, sparse_encoders=True,
                         run_rule="retrieve_sparse", index=IndexStage("sparse_index", ("chunker", "encoder")),
                         encoding=SPARSE_ENCODING, registers=("SERVED_FILES",)),
    "vectordb": MethodType("dense", {"engine": REQUIRED, "encoder": REQUIRED, "vector_index": LIBRARY,
                                     "collection": OPTIONAL, "chunker": OPTIONAL, "rewrite": OPTIONAL},
                           settings="rankbench.retrieval.vectordb:vectordb_settings", run_rule="retrieve_vectordb",
                           index=IndexStage("vectordb_collection", ("chunker", "encoder", "index")),
                           check="rankbench.retrieval.vectordb:check_vectordb_method", existing_index="collection",
                           engine="rankbench.retrieval.vectordb:engine_entry", modules=("lancedb",),
                           extra="vectordb", registers=("SERVED_FILES", "ANN_RECALL_METHODS")),
    "rrf": MethodType("fusion", {**_FUSION, "k": RRF_K}, inputs_key="inputs", run_rule="fuse",
                      serve=_SERVE_FUSION),
    "combsum": MethodType("fusion", {**_FUSION, "normalization": NORMALIZATION}, inputs_key="inputs",
                          run_rule="fuse", serve=_SERVE_FUSION),
    "combmnz": MethodType("fusion", {**_FUSION, "normalization": NORMALIZATION}, inputs_key="inputs",
                          run_rule="fuse", serve=_SERVE_FUSION),
    "rerank": MethodType("rerank", {"input": REQUIRED, "depth": 30, "scorer": REQUIRED,
                                    "rewrite": OPTIONAL}, inputs_key="input", run_rule="rerank",
                       registers=("RERANKED_METHODS", "SERVED_FILES"),
                       serve="rankbench.retrieval.serving:serve_rerank"),
    "external": MethodType("external", {"path": REQUIRED, "format": REQUIRED, "chunker": OPTIONAL},
                           grains=("document",), run_rule="import_run"),
    # A search endpoint: scored by the documents its answers name (document grain), like an imported run; an
    # endpoint that returns the chunker's chunk ids (`returns: chunk`) can be reranked too.
    "http": MethodType("external", {"url": REQUIRED, "preset": OPTIONAL, "hits": OPTIONAL, "ids": OPTIONAL,
                                    "scores": OPTIONAL, "id_pattern": OPTIONAL, "returns": "document",
                                    "chunker": OPTIONAL,
                                    **dict.fromkeys(HTTP_LIBRARY_KEYS, LIBRARY)},
                       grains=("document",), settings="rankbench.retrieval.http_search:http_settings",
                       run_rule="search_http", check="rankbench.retrieval.http_search:check_http_method",
                       engine="rankbench.retrieval.http_search:engine_entry",
                       renamed={"k": ("hits", "the number of hits asked for")},
                       serve="rankbench.retrieval.serving:serve_http"),
}


def _has_default(value: Any) -> bool:
    return value is not REQUIRED and value is not OPTIONAL and value is not LIBRARY


def hook(path: str) -> Callable[..., Any]:
    """The function a "module:function" hook of an entry names (`settings`, `check`), imported when first called:
    the registry stays light enough for the Snakefile to import while it parses."""
    import importlib

    module, function = path.split(":")
    return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]


def method_type(spec: Mapping[str, Any]) -> MethodType:
    """The registry entry of a method's config (its type checked at start by configuration/config.py)."""
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
    if "scorer" in keys and scorer_kind(scorer).encoder:
        encoders.append(scorer.get("encoder"))
    return encoders


def scorer_model(name: str, spec: Mapping[str, Any]) -> str | None:
    """Config key of the model a method's scorer loads (a cross-encoder's: `methods.<name>.scorer`), else None."""
    scorer = spec.get("scorer") or {}
    return f"methods.{name}.scorer" if "scorer" in method_type(spec).keys and scorer_kind(scorer).model else None


def engine_key(name: str, spec: Mapping[str, Any]) -> str | None:
    """Key of the engine a method's questions are answered by (`methods.<name>.engine`: Anserini, a vector database,
    a search service), None for a type whose entry names no `engine`."""
    return f"methods.{name}.engine" if method_type(spec).engine else None


def own_models(name: str, spec: Mapping[str, Any]) -> list[str]:
    """Config keys of the models and engines a method itself uses (not its inputs'): its encoders', its engine's and
    its scorer's (a cross-encoder it loads, or an LLM it asks), read by key whatever the type."""
    scorer = spec.get("scorer") or {} if "scorer" in method_type(spec).keys else {}
    own = [f"methods.{name}.scorer"] if scorer_kind(scorer).model or scorer_kind(scorer).chat else []
    engine = engine_key(name, spec)
    return [f"encoders.{encoder}" for encoder in method_encoders(spec) if encoder] + ([engine] if engine else []) + own


def reads_existing_index(spec: Mapping[str, Any]) -> bool:
    """Whether a method searches an index the workflow neither builds nor encodes a corpus for (an existing one)."""
    key = method_type(spec).existing_index
    return bool(key and spec.get(key))


def builds_index(spec: Mapping[str, Any]) -> bool:
    """Whether the workflow builds the index a method searches (not when it searches none, or an existing one)."""
    return method_type(spec).index is not None and not reads_existing_index(spec)


def index_rule(spec: Mapping[str, Any]) -> str | None:
    """The rule that builds the index a method searches, or None (it searches none, or an existing one)."""
    stage = method_type(spec).index
    return stage.rule if stage and builds_index(spec) else None


def method_grains(spec: Mapping[str, Any]) -> list[str]:
    """Grains a method is scored at (see evaluation.scoring.GRAINS): one searching an existing index returns ids made
    outside rankbench's chunker, scored at document grain as an external run's are."""
    return ["document"] if reads_existing_index(spec) else list(method_type(spec).grains)


def method_setting(spec: Mapping[str, Any], key: str) -> Any:
    """A method's value of one of its type's keys: the config's, else the registry default (None: none there)."""
    default = method_type(spec).keys[key]
    return spec.get(key, None if default is REQUIRED or default is LIBRARY else default)


def any_method_setting(spec: Mapping[str, Any], key: str) -> Any:
    """A method's value of a key whatever its type reads: the config's, else the key's registry default (one for
    every type that has one: tests/retrieval/test_registry.py). For a rule whose params every type it serves gets
    alike (`fuse` passes each fusion type both `k` and `normalization`), so they keep one shape."""
    defaults = [kind.keys[key] for kind in METHOD_TYPES.values() if _has_default(kind.keys.get(key, REQUIRED))]
    return spec.get(key, defaults[0] if defaults else None)


def types_using(key: str) -> tuple[str, ...]:
    """Method types that read a config key, in registry order."""
    return tuple(name for name, kind in METHOD_TYPES.items() if key in kind.keys)


def method_defaults(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A method's config with its type's defaults filled in (keys without a default left unset), keys sorted."""
    defaults = {key: value for key, value in method_type(spec).keys.items() if _has_default(value)}
    return dict(sorted({**defaults, **spec}.items()))
