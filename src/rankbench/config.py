"""The method graph declared in config: checked before anything runs, resolved into plain per-rule values."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rankbench.errors import InputError

METHOD_TYPES = ("bm25", "dense", "rrf", "rerank", "external")
FIRST_STAGE_TYPES = ("bm25", "dense")


def method_inputs(spec: Mapping[str, Any]) -> list[str]:
    """Names of the runs a method consumes (fusion: `inputs`; rerank: `input`)."""
    if spec["type"] == "rrf":
        return list(spec.get("inputs", []))
    if spec["type"] == "rerank":
        return [spec["input"]]
    return []


def check_methods(config: Mapping[str, Any], source: str) -> None:
    """Unknown types, unknown inputs, unknown encoders/chunkers and cycles are config errors, caught at start."""
    methods, encoders, chunkers = config["methods"], config.get("encoders", {}), config["chunkers"]
    for name, spec in methods.items():
        where = f"methods.{name}"
        if spec["type"] not in METHOD_TYPES:
            raise InputError(source, where, f"has unknown type {spec['type']!r}",
                             f"Use one of: {', '.join(METHOD_TYPES)}.")
        for input_name in method_inputs(spec):
            if input_name not in methods:
                raise InputError(source, where, f"consumes the run of {input_name!r}, which is not a method",
                                 f"Name one of the configured methods: {', '.join(sorted(methods))}.")
        encoder_names = [spec.get("encoder")] if spec["type"] == "dense" else []
        if spec["type"] == "rerank" and spec["scorer"]["kind"] == "bi-encoder":
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
    for name in methods:
        method_chunker(config, name, source)
    baseline = config.get("evaluation", {}).get("baseline")
    if baseline is not None and baseline not in methods:
        raise InputError(source, "evaluation.baseline", f"names {baseline!r}, which is not a method",
                         f"Name one of the configured methods: {', '.join(sorted(methods))}.")


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
    "bootstrap_resamples": 10_000, "seed": 0,
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
