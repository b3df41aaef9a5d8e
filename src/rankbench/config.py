"""The method graph declared in config: grids expanded, checked before anything runs, resolved into plain values."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from typing import Any

from rankbench.errors import InputError

FUSION_TYPES = ("rrf", "combsum", "combmnz")
FIRST_STAGE_TYPES = ("bm25", "dense")
METHOD_TYPES = FIRST_STAGE_TYPES + FUSION_TYPES + ("rerank", "external")
FILTERS = ("audience", "validity")
# Keys a grid may not vary: they change what a method is, not how it is tuned.
_STRUCTURAL_KEYS = ("type", "inputs", "input", "grid")


def grid_point_name(name: str, point: Mapping[str, Any]) -> str:
    """Deterministic name of one grid point: `name[key=value,...]`, keys sorted."""
    return f"{name}[{','.join(f'{key}={_plain(value)}' for key, value in sorted(point.items()))}]"


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


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
        keys = sorted(grid)
        for values in itertools.product(*(grid[key] for key in keys)):
            point = dict(zip(keys, values))
            base = {key: value for key, value in spec.items() if key != "grid"}
            expanded[grid_point_name(name, point)] = {**base, **point}
    grids = {name: [point for point in expanded if point.startswith(f"{name}[")]
             for name, spec in methods.items() if spec.get("grid")}
    for name, spec in expanded.items():
        for input_name in method_inputs(spec):
            if input_name in grids:
                raise InputError(source, f"methods.{name}", f"consumes {input_name!r}, which is a grid",
                                 f"Name one of its points: {', '.join(grids[input_name])}.")
    return dict(sorted(expanded.items()))


def method_inputs(spec: Mapping[str, Any]) -> list[str]:
    """Names of the runs a method consumes (fusion: `inputs`; rerank: `input`)."""
    if spec["type"] in FUSION_TYPES:
        return list(spec.get("inputs", []))
    if spec["type"] == "rerank":
        return [spec["input"]]
    return []


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
        encoder_names = [spec.get("encoder")] if kind == "dense" else []
        if kind == "rerank" and spec["scorer"]["kind"] == "bi-encoder":
            encoder_names.append(spec["scorer"].get("encoder"))
        for encoder in encoder_names:
            if encoder not in encoders:
                raise InputError(source, where, f"uses encoder {encoder!r}, which is not under `encoders`",
                                 f"Declare it under `encoders` or use one of: {', '.join(sorted(encoders)) or 'none'}.")
        if spec["type"] == "external" and (not spec.get("path") or spec.get("format") not in ("trec", "parquet")):
            raise InputError(source, where, "is an external run without `path` and `format` (trec or parquet)",
                             "Give e.g. `path: runs/{qset}/colbert.trec` and `format: trec`.")
        chunker = spec.get("chunker")
        if chunker is not None and chunker not in chunkers:
            raise InputError(source, where, f"uses chunker {chunker!r}, which is not under `chunkers`",
                             f"Use one of: {', '.join(sorted(chunkers))}.")
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


def _check_keys_apply(spec: Mapping[str, Any], where: str, source: str) -> None:
    """Keys that only make sense for some method types are errors elsewhere (they would be silently ignored)."""
    allowed = {"prf": ("bm25",), "index": ("dense",), "filters": FIRST_STAGE_TYPES,
               "rewrite": FIRST_STAGE_TYPES + ("rerank",), "normalization": ("combsum", "combmnz"),
               "weights": FUSION_TYPES}
    for key, types in allowed.items():
        if key in spec and spec["type"] not in types:
            raise InputError(source, where, f"sets `{key}`, which a {spec['type']} method does not use",
                             f"`{key}` applies to: {', '.join(types)}.")


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
        raise InputError(source, f"methods.{name}", f"combines runs over different chunkers ({', '.join(sorted(found))})",
                         "Fuse or rerank runs made over the same chunker.")
    return found.pop()


EVALUATION_DEFAULTS: dict[str, Any] = {
    "depth": 100, "ks": [1, 3, 5, 10], "relevance_threshold": 1, "gain": "linear", "baseline": None,
    "bootstrap_resamples": 10_000, "seed": 0, "metrics": [], "rbp_p": 0.8,
}


def evaluation_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The `evaluation` block with defaults filled in and ks sorted."""
    settings = {**EVALUATION_DEFAULTS, **config.get("evaluation", {})}
    settings["ks"] = sorted(set(settings["ks"]))
    return settings


def _escapes(path: str, roots: list[str]) -> bool:
    """Whether a relative path leaves every root ('..' counted lexically, symlinks not followed)."""
    relative = [os.path.relpath(os.path.normpath(path), os.path.normpath(root)) for root in roots]
    return all(rel == os.pardir or rel.startswith(os.pardir + os.sep) for rel in relative)


def check_paths(config: Mapping[str, Any], source: str) -> None:
    """Relative paths stay inside the project (or, for inputs, the dataset root); absolute ones are deliberate."""
    dataset = config["dataset"]
    input_roots = ["."] + ([dataset["path"]] if dataset.get("path") else [])
    checks = [("results", config.get("results", "results"), ["."])]
    checks += [(f"dataset.{key}", dataset[key], input_roots) for key in ("corpus", "lock") if key in dataset]
    checks += [(f"qsets.{name}.path", spec["path"], input_roots)
               for name, spec in config["qsets"].items() if "path" in spec]
    for where, path, roots in checks:
        if not os.path.isabs(path) and _escapes(path, roots):
            raise InputError(source, where, f"{path!r} leads outside the project"
                             + (" and the dataset root" if len(roots) > 1 else ""),
                             "Keep relative paths inside the project, or write an absolute path if you mean it.")
