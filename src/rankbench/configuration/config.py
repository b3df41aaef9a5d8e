"""The method graph declared in config: grids expanded, checked before anything runs, resolved into plain values."""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import jsonschema

from rankbench.configuration.dataset_formats import check_dataset_keys
from rankbench.configuration.defaults import DATASET_DEFAULTS, DATASET_ENTRIES, RESULTS, RESULTS_ENTRIES
from rankbench.configuration.models import check_model_names
from rankbench.configuration.software import check_installed
from rankbench.corpus.chunking import ChunkerSpec
from rankbench.corpus.tokens import TOKENIZER_FIX, tokenizer_problem
from rankbench.errors import InputError
from rankbench.evaluation.metric_names import METRIC_ALIASES, METRICS
from rankbench.io.http import api_key, check_base_url
from rankbench.retrieval.analyzer import LANGUAGES
from rankbench.retrieval.encoders.api import ApiEncoderSpec
from rankbench.retrieval.encoders.base import EncoderSpec
from rankbench.retrieval.encoders.hub import is_hub_id
from rankbench.retrieval.encoders.kinds import encoder_kind, kinds_making
from rankbench.retrieval.registry import (
    METHOD_TYPES,
    REQUIRED,
    STRUCTURAL_KEYS,
    hook,
    method_encoders,
    method_inputs,
    types_using,
)

# Encoder keys that only an embedding API (`kind: openai`) reads.
API_ENCODER_KEYS = sorted({f.name for f in fields(ApiEncoderSpec)} - {f.name for f in fields(EncoderSpec)})
# Keys a grid may not vary: they change what a method is, not how it is tuned.
_STRUCTURAL_KEYS = STRUCTURAL_KEYS + tuple(dict.fromkeys(kind.inputs_key for kind in METHOD_TYPES.values()
                                                         if kind.inputs_key))
# Methods once grids are expanded (each is a run per version, a row of every table, and its jobs).
MAX_METHODS = 1_000
# A method name (grid point names included) is a file name stem: runs/<method>.parquet, benchmarks, logs.
MAX_NAME_LENGTH = 200
# A grid value becomes part of a file name (`runs/name[key=value].parquet`).
_GRID_VALUE = re.compile(r"^[A-Za-z0-9_.+-]{1,100}$")


def validate_config(config: Mapping[str, Any], schema: Mapping[str, Any], source: str) -> None:
    """The raw config against the JSON schema, every number in it finite first; the most relevant error named by its
    key."""
    check_finite(config, source)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is not None:
        raise _schema_error(error, source)


def check_finite(value: Any, source: str, where: str = "") -> None:
    """No number of a config is NaN or infinite (YAML reads `.nan` and `.inf` as numbers). JSON Schema's bounds let
    NaN through (every comparison with it is false), and no key means anything by an infinite value: a margin, a
    threshold, a weight or a timeout must be a finite number, or be left out for its default."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(source, where or "top level", f"is {value}, not a finite number",
                         "Give a finite number, or leave the key out for its default (see docs/reference/config.md).")
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_finite(item, source, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            check_finite(item, source, f"{where}[{number}]")


def _schema_error(error: jsonschema.ValidationError, source: str) -> InputError:
    """A schema error as the key it concerns (dotted, list items in brackets), the problem and the fix."""
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    where = where.lstrip(".") or "top level"
    problem, fix = error.message, "See docs/reference/config.md for what this key accepts."
    if where == "results":
        fix = "Name a folder, e.g. `results`, without {…} (Snakemake would read it as a wildcard)."
    elif error.validator == "pattern":
        fix = ("Names become folder and file names: letters, digits and _ . + - "
               "(the last three not first), at most 100 characters.")
    return InputError(source, where, problem, fix)


def check_reserved_name(name: str, reserved: tuple[str, ...], folder: str, source: str, where: str) -> None:
    """A name that becomes a folder beside files and folders rankbench writes itself (compared case-insensitively,
    as some file systems do) is refused: the two would collide."""
    if name.casefold() in reserved:
        raise InputError(source, where, f"{name!r} is reserved: rankbench writes {folder}/{name} itself",
                         f"Choose another name (reserved: {', '.join(reserved)}).")


def check_reserved_names(config: Mapping[str, Any], source: str) -> None:
    """The dataset's name (a folder of results/) and the versions' (folders of results/<dataset>/) are not names
    rankbench writes there itself."""
    results = config.get("results", RESULTS)
    check_reserved_name(config["dataset"]["name"], RESULTS_ENTRIES, results, source, "dataset.name")
    for qset in config["qsets"]:
        check_reserved_name(qset, DATASET_ENTRIES, f"{results}/{config['dataset']['name']}", source, f"qsets.{qset}")


def check_grids(methods: Mapping[str, Mapping[str, Any]], schema: Mapping[str, Any], source: str) -> None:
    """Every grid key is a parameter and every value passes the schema rule of the plain key it stands for."""
    method_schema = schema["properties"]["methods"]["additionalProperties"]
    validator = jsonschema.Draft202012Validator(schema)
    for name, spec in methods.items():
        for key, values in spec.get("grid", {}).items():
            where = f"methods.{name}.grid.{key}"
            if key in _STRUCTURAL_KEYS:
                continue  # expand_methods says why
            if key not in method_schema["properties"]:
                parameters = sorted(set(method_schema["properties"]) - set(_STRUCTURAL_KEYS))
                raise InputError(source, where, f"varies {key!r}, which is not a method parameter",
                                 f"Vary one of: {', '.join(parameters)}.")
            if key in spec:
                raise InputError(source, where, f"varies {key!r}, which the method also sets",
                                 f"Remove `methods.{name}.{key}` or the grid over it.")
            for number, value in enumerate(values):
                error = jsonschema.exceptions.best_match(
                    validator.evolve(schema=method_schema["properties"][key]).iter_errors(value))
                if error is not None:
                    raise InputError(source, f"{where}[{number}]", error.message,
                                     f"A grid value must be a valid `{key}` of a method "
                                     "(see docs/reference/config.md).")
                if not _GRID_VALUE.match(_plain(value)):
                    raise InputError(source, f"{where}[{number}]", f"{value!r} cannot be part of a method name",
                                     "Grid values become file names: letters, digits and _ . + - only.")


def check_config(config: Mapping[str, Any], schema: Mapping[str, Any], source: str, inputs: bool = True
                 ) -> dict[str, dict[str, Any]]:
    """Every check that can fail on the config alone, in order, at start: the methods with grids expanded. Without
    `inputs`, the files it reads need not exist yet (`rankbench init` checks the config it will write first)."""
    validate_config(config, schema, source)
    check_reserved_names(config, source)
    check_grids(config["methods"], schema, source)
    methods = expand_methods(config["methods"], source)
    expanded = {**config, "methods": methods, "chunkers": expand_chunkers(config["chunkers"], source)}
    check_renamed_keys(methods, source)
    check_methods(expanded, source)
    check_installed(expanded, source)
    check_settings(expanded, source)
    check_requested_metrics(expanded, source)
    check_llm(expanded, source)
    check_prices(expanded, source)
    check_endpoints(expanded, source)
    check_paths(expanded, schema, source)
    if inputs:
        check_inputs(expanded, source)
    return methods


def grid_point_name(name: str, point: Mapping[str, Any]) -> str:
    """Deterministic name of one grid point: `name[key=value,...]`, keys sorted."""
    return f"{name}[{','.join(f'{key}={_plain(value)}' for key, value in sorted(point.items()))}]"


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def expand_chunkers(chunkers: Mapping[str, Mapping[str, Any]], source: str) -> dict[str, dict[str, Any]]:
    """Every configured chunker with its `grid` (e.g. `size: [200, 400, 800]`) expanded into one chunker per point,
    named `fixed-size400` (`fixed-overlap50-size400` for two keys, sorted: a plain name, so a method grid may vary
    `chunker` over the points), sorted by name; every method x chunker is then a run."""
    expanded: dict[str, dict[str, Any]] = {}
    for name, spec in chunkers.items():
        base = {key: value for key, value in spec.items() if key != "grid"}
        grid = spec.get("grid") or {}
        if "kind" in grid:
            raise InputError(source, f"chunkers.{name}.grid", "varies 'kind', which defines the chunker",
                             "A grid varies parameters only (e.g. size, overlap); declare other chunkers apart.")
        keys = sorted(grid)
        for values in itertools.product(*(grid[key] for key in keys)) if keys else [()]:
            point = dict(zip(keys, values))
            expanded["-".join([name, *(f"{key}{value}" for key, value in point.items())])] = {**base, **point}
    if len(expanded) > MAX_METHODS:
        raise InputError(source, "chunkers", f"has {len(expanded):,} chunkers once grids are expanded, more than "
                         f"{MAX_METHODS:,}", "Vary fewer values at once.")
    return dict(sorted(expanded.items()))


def expand_methods(methods: Mapping[str, Mapping[str, Any]], source: str) -> dict[str, dict[str, Any]]:
    """Every configured method with its `grid` expanded into one method per point (sorted by name).

    Inputs of fusion/rerank methods name concrete methods: a grid point by its full name
    (`bm25[k1=0.9]`), never a grid's base name, so every composed run says exactly what it consumes.
    """
    expanded: dict[str, dict[str, Any]] = {}
    for name, spec in methods.items():
        grid = spec.get("grid")
        if not grid:
            expanded[name] = {key: value for key, value in spec.items() if key != "grid"}
            continue
        for key in grid:
            if key in _STRUCTURAL_KEYS:
                raise InputError(source, f"methods.{name}.grid", f"varies {key!r}, which defines the method",
                                 "A grid varies parameters only (e.g. depth, k, k1); declare other methods apart.")
        points = math.prod(len(values) for values in grid.values())
        if len(expanded) + points > MAX_METHODS:
            raise InputError(source, f"methods.{name}.grid", f"makes {points:,} methods, more than the "
                             f"{MAX_METHODS:,} a config may have once grids are expanded",
                             "Vary fewer values at once; every point is a run per version and a row of every table.")
        keys = sorted(grid)
        for values in itertools.product(*(grid[key] for key in keys)):
            point = dict(zip(keys, values))
            base = {key: value for key, value in spec.items() if key != "grid"}
            point_name = grid_point_name(name, point)
            if len(point_name) > MAX_NAME_LENGTH:
                raise InputError(source, f"methods.{name}.grid", f"names a point {point_name!r}, longer than the "
                                 f"{MAX_NAME_LENGTH} characters a method name may have (it names files)",
                                 "Use a shorter method name or fewer, shorter grid values.")
            expanded[point_name] = {**base, **point}
    if len(expanded) > MAX_METHODS:
        raise InputError(source, "methods", f"has {len(expanded):,} methods, more than the {MAX_METHODS:,} a "
                         "config may have", "Compare fewer methods at once.")
    grids = {name: [point for point in expanded if point.startswith(f"{name}[")]
             for name, spec in methods.items() if spec.get("grid")}
    for name, spec in expanded.items():
        for input_name in method_inputs(spec):
            if input_name in grids:
                raise InputError(source, f"methods.{name}", f"consumes {input_name!r}, which is a grid",
                                 f"Name one of its points: {', '.join(grids[input_name])}.")
    return dict(sorted(expanded.items()))


def _backquoted(keys: list[str]) -> str:
    """Config keys as the messages print them: `a` and `b`."""
    return " and ".join(f"`{key}`" for key in keys)


def check_methods(config: Mapping[str, Any], source: str) -> None:
    """Unknown types, inputs, encoders, chunkers, rewrites and cycles are config errors, caught at start.

    `config["methods"]` must already be expanded (see expand_methods).
    """
    methods, encoders, chunkers = config["methods"], config.get("encoders", {}), config["chunkers"]
    for name, spec in methods.items():
        where = f"methods.{name}"
        kind = spec["type"]
        if kind not in METHOD_TYPES:
            raise InputError(source, where, f"has unknown type {kind!r}", f"Use one of: {', '.join(METHOD_TYPES)}.")
        for input_name in method_inputs(spec):
            if input_name not in methods:
                raise InputError(source, where, f"consumes the run of {input_name!r}, which is not a method",
                                 f"Name one of the configured methods: {', '.join(sorted(methods))}.")
        weights = spec.get("weights")
        if weights is not None and len(weights) != len(method_inputs(spec)):
            raise InputError(source, where, f"has {len(weights)} weights for {len(method_inputs(spec))} inputs",
                             "Give one weight per input, in the order of `inputs`.")
        _check_keys_apply(spec, where, source)
        zones = spec.get("abstention", {}).get("zones")
        if zones is not None and not zones[0] < zones[1]:  # finite: check_finite
            raise InputError(source, f"{where}.abstention.zones", f"is {zones}: not two finite thresholds t1 < t2",
                             "Give [t1, t2] with t1 < t2 on the method's score scale: below t1 it abstains, from "
                             "t1 to below t2 it answers cautiously (the calibration page lists its top-1 scores).")
        required = [key for key, default in METHOD_TYPES[kind].keys.items() if default is REQUIRED]
        missing = [key for key in required if not spec.get(key)]
        if missing:
            article = "an" if kind[0] in "aeiou" else "a"
            raise InputError(source, where, f"is {article} {kind} method without {_backquoted(missing)}",
                             f"A {kind} method needs {_backquoted(required)} "
                             "(see docs/reference/config.md, `methods`).")
        for encoder in method_encoders(spec):
            if encoder not in encoders:
                raise InputError(source, where, f"uses encoder {encoder!r}, which is not under `encoders`",
                                 f"Declare it under `encoders` or use one of: {', '.join(sorted(encoders)) or 'none'}.")
            kinds = kinds_making(METHOD_TYPES[kind].sparse_encoders)
            if encoders[encoder]["kind"] not in kinds:
                fitting = sorted(name for name, spec in encoders.items() if spec["kind"] in kinds)
                raise InputError(source, where, f"uses encoder {encoder!r} of kind {encoders[encoder]['kind']}, which "
                                 f"a {kind} method cannot use (kind {' or '.join(kinds)})",
                                 f"Use one of: {', '.join(fitting)}." if fitting else
                                 f"Declare an encoder of kind {' or '.join(kinds)} under `encoders`.")
        chunker = spec.get("chunker")
        if chunker is not None and chunker not in chunkers:
            raise InputError(source, where, f"uses chunker {chunker!r}, which is not under `chunkers`",
                             f"Use one of: {', '.join(sorted(chunkers))}.")
        expansion = spec.get("expansion")
        if expansion is not None and expansion not in config["dataset"].get("expansions", {}):
            raise InputError(source, where, f"uses expansion {expansion!r}, which is not under `dataset.expansions`",
                             f"Add `dataset.expansions.{expansion}: PATH` (a JSONL of doc_id/questions lines).")
        rewrite = spec.get("rewrite")
        if rewrite is not None:
            for qset, qset_spec in config["qsets"].items():
                if rewrite not in qset_spec.get("rewrites", {}):
                    raise InputError(source, where, f"uses rewrite {rewrite!r}, which question-set version "
                                     f"{qset!r} does not supply",
                                     f"Add `qsets.{qset}.rewrites.{rewrite}: PATH` (a JSONL of qid/query lines).")
    for name in methods:
        method_chunker(config, name, source)
    baseline = config.get("evaluation", {}).get("baseline")
    if baseline is not None and baseline not in methods:
        raise InputError(source, "evaluation.baseline", f"names {baseline!r}, which is not a method",
                         f"Name one of the configured methods: {', '.join(sorted(methods))}.")
    comparisons = config.get("report", {}).get("comparisons", "baseline")
    for number, pair in enumerate([] if comparisons == "baseline" else comparisons):
        unknown = [name for name in pair if name not in methods]
        if unknown or pair[0] == pair[1]:
            raise InputError(source, f"report.comparisons[{number}]",
                             f"names {unknown[0]!r}, which is not a method" if unknown else
                             f"compares {pair[0]!r} with itself",
                             f"Pair two configured methods (grid points by full name): {', '.join(sorted(methods))}.")


def _check_keys_apply(spec: Mapping[str, Any], where: str, source: str) -> None:
    """Keys that only make sense for some method types are errors elsewhere (they would be silently ignored); the
    registry says which type reads which key."""
    for key in spec:
        if key not in STRUCTURAL_KEYS and key not in METHOD_TYPES[spec["type"]].keys:
            raise InputError(source, where, f"sets `{key}`, which a {spec['type']} method does not use",
                             f"`{key}` applies to: {', '.join(types_using(key))}.")


def check_renamed_keys(methods: Mapping[str, Any], source: str) -> None:
    """A key a method's type renamed (the registry's `renamed`) is told its new name, not merely refused as unused:
    `rankbench check` and the workflow's start both call this on the methods, grids expanded."""
    for name, spec in methods.items():
        kind = METHOD_TYPES.get(spec.get("type"))
        for key in spec:
            if kind is not None and key in kind.renamed:
                new_key, meaning = kind.renamed[key]
                raise InputError(source, f"methods.{name}", f"`{key}` is now `{new_key}` for `type: {spec['type']}` "
                                 f"({meaning})", f"Rename it to `{new_key}`.")


def method_chunker(config: Mapping[str, Any], name: str, source: str, _path: tuple[str, ...] = ()) -> str:
    """The chunker a method ranks; composed methods take their inputs' (which must agree)."""
    if name in _path:
        raise InputError(source, f"methods.{name}", f"is part of a cycle: {' -> '.join(_path + (name,))}",
                         "A method cannot consume its own run, directly or through others.")
    spec = config["methods"][name]
    inputs = method_inputs(spec)
    if not inputs:
        return spec.get("chunker") or config["chunker"]
    found = {method_chunker(config, i, source, _path + (name,)) for i in inputs}
    if len(found) > 1:
        raise InputError(source, f"methods.{name}",
                         f"combines runs over different chunkers ({', '.join(sorted(found))})",
                         "Fuse or rerank runs made over the same chunker.")
    return found.pop()


def check_settings(config: Mapping[str, Any], source: str) -> None:
    """Dataset, analyzers, chunkers and models: what each needs, checked before any job (methods expanded)."""
    dataset = config["dataset"]
    check_dataset_keys(config, source)
    language = dataset.get("language", DATASET_DEFAULTS["language"])
    if language not in LANGUAGES:
        raise InputError(source, "dataset.language", f"is {language!r}, which the BM25 analyzer does not know",
                         f"Use one of: {', '.join(LANGUAGES)}.")
    for name, spec in config["methods"].items():
        check = METHOD_TYPES[spec["type"]].check
        if check:
            hook(check)(spec, {**DATASET_DEFAULTS, **dataset}, f"methods.{name}", source)
    if config["chunker"] not in config["chunkers"]:
        raise InputError(source, "chunker", f"names {config['chunker']!r}, which is not under `chunkers`",
                         f"Use one of: {', '.join(sorted(config['chunkers']))}.")
    for name, spec in config["chunkers"].items():
        try:
            ChunkerSpec.from_config(spec).check_overlap()
        except ValueError as error:
            raise InputError(source, f"chunkers.{name}", str(error),
                             "Every chunker but sections needs a size; the overlap must be at most half the "
                             "size.") from None
    for name, spec in config.get("encoders", {}).items():
        _check_api_encoder(name, spec, source)
        model = spec.get("model", "")
        if encoder_kind(spec).sparse and not Path(model).is_dir() and not is_hub_id(model):
            raise InputError(source, f"encoders.{name}.model", f"{model!r} is neither an existing folder nor a hub id",
                             "Give the folder of a sentence-transformers SparseEncoder model, or its hub id "
                             "(org/name, see docs/reference/config.md, `encoders`, for the SPLADE models to pick).")
    check_model_names(config, source)


def check_requested_metrics(config: Mapping[str, Any], source: str) -> None:
    """`evaluation.metrics` names metrics of the table computed on request (evaluation/metric_names.py, family
    `extra`): the table, not the schema, knows them, so a new row needs no other edit."""
    on_request = [name for name, metric in METRICS.items() if metric.family == "extra"]
    for index, name in enumerate(config.get("evaluation", {}).get("metrics", [])):
        if name in on_request:
            continue
        known = METRIC_ALIASES.get(str(name).lower(), str(name).lower())
        why = ("is always computed" if METRICS[known].family != "extra" else f"is written {known!r} here") \
            if known in METRICS else "is no metric of the table"
        raise InputError(source, f"evaluation.metrics[{index}]", f"names {name!r}, which {why}",
                         f"Name metrics computed on request: {', '.join(on_request)} (docs/concepts/metrics.md).")


def _check_api_encoder(name: str, spec: Mapping[str, Any], source: str) -> None:
    """Keys of an embedding API only on `kind: openai`, `device` only on the others, a sparse encoder's keys only on
    `kind: sparse` (the endpoint itself: check_endpoints)."""
    api = encoder_kind(spec).api
    stray = sorted(set(spec) & ({"device"} if api else set(API_ENCODER_KEYS)))
    if encoder_kind(spec).sparse:
        stray = sorted(set(spec) - {f.name for f in fields(encoder_kind(spec).spec)})
    if stray:
        raise InputError(source, f"encoders.{name}.{stray[0]}", f"does not apply to kind {spec['kind']}",
                         "Remove it (see docs/reference/config.md, `encoders`).")


def check_endpoints(config: Mapping[str, Any], source: str) -> None:
    """Every API endpoint (embedding encoders, chat models): no credentials in its URL, its key's variable set (its
    timeouts are finite: check_finite)."""
    endpoints = [(f"encoders.{name}", spec) for name, spec in config.get("encoders", {}).items()
                 if encoder_kind(spec).api]
    endpoints += [("llm.chat", config.get("llm", {}).get("chat", {}))]
    endpoints += [(f"methods.{name}.scorer.chat", spec["scorer"].get("chat", {}))
                  for name, spec in config["methods"].items() if isinstance(spec.get("scorer"), Mapping)]
    for setting, spec in endpoints:
        if spec.get("base_url"):
            check_base_url(spec["base_url"], setting, source)
        if spec.get("api_key_env"):
            api_key(spec["api_key_env"], setting, source)


def check_llm(config: Mapping[str, Any], source: str) -> None:
    """The LLM stage's references: versions, methods and chunker it names exist (methods expanded)."""
    llm = config.get("llm", {})
    for task in ("judge", "rewrite"):
        for number, qset in enumerate(llm.get(task, {}).get("qsets", [])):
            if qset not in config["qsets"]:
                raise InputError(source, f"llm.{task}.qsets[{number}]", f"names {qset!r}, which is not under `qsets`",
                                 f"Name one of: {', '.join(sorted(config['qsets']))}.")
    judge = llm.get("judge", {})
    for number, method in enumerate(judge.get("methods", [])):
        if method not in config["methods"]:
            raise InputError(source, f"llm.judge.methods[{number}]", f"names {method!r}, which is not a method",
                             f"Name one of: {', '.join(config['methods'])}.")
    if judge.get("chunker", config["chunker"]) not in config["chunkers"]:
        raise InputError(source, "llm.judge.chunker", f"names {judge['chunker']!r}, which is not under `chunkers`",
                         f"Use one of: {', '.join(sorted(config['chunkers']))}.")


def priced_models(config: Mapping[str, Any]) -> list[str]:
    """The models a price table may name: every `model` of an encoder, a reranker's scorer or its chat, and the LLM
    stage's chat (methods expanded)."""
    models = [spec.get("model") for spec in config.get("encoders", {}).values()]
    for spec in config["methods"].values():
        scorer = spec.get("scorer") or {}
        models += [scorer.get("model"), (scorer.get("chat") or {}).get("model")]
    models.append(config.get("llm", {}).get("chat", {}).get("model"))
    return sorted({model for model in models if isinstance(model, str)})


def check_prices(config: Mapping[str, Any], source: str) -> None:
    """`cost.prices` names only models the config uses (a typo would silently price nothing); the schema has
    already refused negative prices."""
    known = priced_models(config)
    for model in config.get("cost", {}).get("prices", {}):
        if model not in known:
            raise InputError(source, f"cost.prices.{model}", f"names model {model!r}, which no encoder, scorer or "
                             "chat of this config uses", f"Name a model as the config does: one of "
                             f"{', '.join(repr(name) for name in known) or '(none: this config calls no model)'}.")


def _escapes(path: str) -> bool:
    """Whether a relative path leaves the project folder ('..' counted lexically, symlinks not followed)."""
    relative = os.path.normpath(path)
    return relative == os.pardir or relative.startswith(os.pardir + os.sep)


def input_paths(config: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(key, path, is a folder) of every file or folder the config reads; external runs once per version."""
    dataset = config["dataset"]
    if dataset["format"] == "native":
        paths = [("dataset.corpus", dataset["corpus"], False), ("dataset.lock", dataset["lock"], False)]
        paths += [(f"qsets.{name}.path", spec["path"], False) for name, spec in config["qsets"].items()]
    elif dataset["format"] == "trec":
        paths = [("dataset.corpus", dataset["corpus"], False)]
        paths += [(f"qsets.{name}.{key}", spec[key], False) for name, spec in config["qsets"].items()
                  for key in ("topics", "qrels")]
    elif dataset["format"] == "ir_datasets":
        paths = []
    else:
        root = dataset["path"]
        paths = [("dataset.path", root, True), ("dataset.path", f"{root}/corpus.jsonl", False),
                 ("dataset.path", f"{root}/queries.jsonl", False)]
        paths += [(f"qsets.{name}.split", f"{root}/qrels/{spec['split']}.tsv", False)
                  for name, spec in config["qsets"].items()]
    paths += [(f"dataset.expansions.{name}", path, False) for name, path in dataset.get("expansions", {}).items()]
    paths += [(f"qsets.{name}.rewrites.{rewrite}", path, False)
              for name, spec in config["qsets"].items() for rewrite, path in spec.get("rewrites", {}).items()]
    paths += [(f"methods.{name}.path", spec["path"].replace("{qset}", qset), False)
              for name, spec in config["methods"].items() if "path" in METHOD_TYPES[spec["type"]].keys
              for qset in config["qsets"]]
    chats = [("llm.chat", config.get("llm", {}).get("chat", {}))]
    chats += [(f"methods.{name}.scorer.chat", spec["scorer"].get("chat", {}))
              for name, spec in config["methods"].items() if "scorer" in METHOD_TYPES[spec["type"]].keys]
    paths += [(f"{where}.model_path", chat["model_path"], False) for where, chat in chats if "model_path" in chat]
    return paths


# The schema annotations of the keys that hold paths (workflow/schemas/*.yaml): read, or written by the run.
PATH_FORMATS = ("path", "output-path")


def path_values(value: Any, schema: Mapping[str, Any], node: Mapping[str, Any] | None = None,
                where: str = "") -> dict[str, tuple[str, str]]:
    """Key -> (value, format) of every string of a config that its schema marks as a path (PATH_FORMATS), found by
    walking the config beside the schema (properties, additionalProperties, items, $ref, oneOf/anyOf branches)."""
    node = schema if node is None else node
    if "$ref" in node:
        target: Any = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{key: item for key, item in node.items() if key != "$ref"}}
    found: dict[str, tuple[str, str]] = {}
    for branch in [*node.get("oneOf", []), *node.get("anyOf", [])]:
        found |= path_values(value, schema, branch, where)
    if isinstance(value, str) and node.get("format") in PATH_FORMATS:
        found[where] = (value, node["format"])
    elif isinstance(value, Mapping):
        for key, item in value.items():
            child = node.get("properties", {}).get(key, node.get("additionalProperties"))
            if isinstance(child, Mapping):
                found |= path_values(item, schema, child, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for number, item in enumerate(value):
            found |= path_values(item, schema, node["items"], f"{where}[{number}]")
    return found


def check_paths(config: Mapping[str, Any], schema: Mapping[str, Any], source: str) -> None:
    """The one path check, over every key the schema marks as a path (a dataset config, methods expanded, or a
    study): what the run writes (`output-path`: the results folder, an LLM request cache), when relative, stays
    inside the project folder (the working directory); absolute paths are deliberate. What it only reads (`path`)
    resolves against the project folder wherever it leads (`corpus: ../shared/corpus.jsonl`); check_inputs and the
    model checks say whether it exists."""
    results = config.get("results", RESULTS)
    if os.path.normpath(results) == os.curdir:
        raise InputError(source, "results", f"{results!r} is the project folder itself",
                         "Name a folder for the results, e.g. `results`.")
    for where, (path, role) in path_values(config, schema).items():
        if role == "output-path" and not os.path.isabs(path) and _escapes(path):
            raise InputError(source, where, f"{path!r} leads outside the project",
                             "Keep what the run writes inside the project folder, or write an absolute path if you "
                             "mean it.")


def check_tokenizers(config: Mapping[str, Any], source: str) -> None:
    """Every tokenizer the config names (a tokens chunker's, evaluation.tokenizer) can be read: a missing file once
    fell back to the regex counter while the effective config and the pages named the file."""
    named = [(f"chunkers.{name}.tokenizer", spec.get("tokenizer")) for name, spec in config["chunkers"].items()]
    setting = config.get("evaluation", {}).get("tokenizer")
    named += [("evaluation.tokenizer", setting)] if setting != "auto" else []
    for where, tokenizer in named:
        problem = tokenizer_problem(tokenizer)
        if problem:
            raise InputError(source, where, problem, TOKENIZER_FIX)


def check_inputs(config: Mapping[str, Any], source: str) -> None:
    """Every file and folder the config reads exists, whatever results are already there."""
    check_tokenizers(config, source)
    for where, path, folder in input_paths(config):
        if "{" in path or "}" in path:
            raise InputError(source, where, f"{path!r} contains {{…}}, which Snakemake reads as a wildcard",
                             "Rename the file or folder without braces (`{qset}` only in an external run's path).")
        if not (Path(path).is_dir() if folder else Path(path).is_file()):
            raise InputError(source, where, f"{path!r} is not an existing {'folder' if folder else 'file'}",
                             "Fix the path (relative paths start from the project folder).")


def check_outputs(outputs: list[str], results: str, source: str) -> None:
    """Every output of the run resolves inside the results folder (names cannot lead elsewhere)."""
    root = os.path.normpath(results)
    for output in outputs:
        if os.path.commonpath([root, os.path.normpath(output)]) != root:
            raise InputError(source, "results", f"output {output!r} would be written outside {results!r}",
                             "Check the names in the config: they must not contain separators or '..'.")
