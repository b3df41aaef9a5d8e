"""A model folder's files checked before anything loads them: JSON that parses, weights whose headers read, and the
layout its kind needs (model2vec, SparseEncoder, a CrossEncoder with its classification head). Reading JSON and
safetensors headers costs milliseconds, so every run does it at start, where a job would fail (or, for a head a
loader initialises at random, silently score noise) much later."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rankbench.retrieval.encoders.hub import weight_files
from rankbench.retrieval.encoders.kinds import ENCODER_KINDS
from rankbench.retrieval.scorer_kinds import SCORER_KINDS


def _json_problem(path: Path) -> str:
    """Why a JSON file of the folder cannot be read ('' when it can)."""
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        return f"{path.name} is not UTF-8 text (byte {error.start})"
    except json.JSONDecodeError as error:
        return f"{path.name} is not valid JSON (line {error.lineno}: {error.msg})"
    return ""


def safetensors_keys(path: Path) -> list[str]:
    """The tensor names of a safetensors file, from its header alone; a corrupt or truncated file raises
    ValueError naming it."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="np") as weights:
            return list(weights.keys())
    except Exception as error:  # noqa: BLE001 - safetensors raises its own SafetensorError, OSError, ...
        raise ValueError(f"{path.name} is not a readable safetensors file ({error})") from None


def required_files(kind: str) -> tuple[str, ...]:
    """What a model folder of `kind` must hold besides config.json: its encoder kind's `files` (none for a
    cross-encoder)."""
    return ENCODER_KINDS[kind].files if kind in ENCODER_KINDS else ()


def _problems(folder: Path, kind: str) -> Iterable[str]:
    files = [path for path in folder.rglob("*") if path.is_file()]
    if not files:
        yield "holds no file"
        return
    for path in sorted(folder.rglob("*.json")):
        yield _json_problem(path)
    keys: list[str] = []
    for path in weight_files(folder):
        if path.suffix == ".safetensors":
            try:
                keys += safetensors_keys(path)
            except ValueError as error:
                yield str(error)
    if not weight_files(folder):
        yield "holds no weight file (*.safetensors or pytorch_model*.bin)"
    missing = [name for name in ("config.json", *required_files(kind)) if not (folder / name).is_file()]
    if missing:
        yield f"has no {' or '.join(missing)}"
    tables = ENCODER_KINDS[kind].tables if kind in ENCODER_KINDS else ()
    absent = [table for table in tables if keys and table not in keys]
    if absent:
        yield f"is not a {ENCODER_KINDS[kind].layout} folder (its weights have no {absent[0]!r} table)"
    head = SCORER_KINDS[kind].architecture if kind in SCORER_KINDS else ""
    if head and (folder / "config.json").is_file() and not _json_problem(folder / "config.json"):
        architectures = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures") or []
        if not any(str(name).endswith(head) for name in architectures):
            yield (f"is not a {kind}: config.json declares {', '.join(map(str, architectures)) or 'no'} "
                   f"architecture, not a …{head} one, so its scoring head would be initialised at "
                   "random (every pair scoring alike)")


def model_folder_problem(folder: str | Path, kind: str) -> str:
    """The first reason this folder cannot be loaded as a model of `kind` (an encoder kind, or a scorer kind that
    loads a model), or '' when its files are in order."""
    return next((problem for problem in _problems(Path(folder), kind) if problem), "")


def uninitialised_parameters(model: Any, folder: str | Path) -> list[str]:
    """Parameters of a loaded transformers model that no safetensors file of its folder holds: a loader initialised
    them at random (a CrossEncoder made of a bi-encoder gets a random head). [] when the weights are .bin files."""
    files = [path for path in weight_files(Path(folder)) if path.suffix == ".safetensors"]
    if not files:
        return []
    stored = {key for path in files for key in safetensors_keys(path)}
    prefix = f"{getattr(model, 'base_model_prefix', '')}."
    return sorted(name for name in model.state_dict()
                  if not {name, name.removeprefix(prefix), prefix + name} & stored)


def output_dimension(folder: str | Path) -> int | None:
    """The vector size a sentence-transformers folder encodes to, read from its modules' configs (a Dense layer's
    out_features, else the Pooling layer's dimension times its pooling modes); None when the folder does not say."""
    folder = Path(folder)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        dimension = None
        for module in modules:
            config_path = folder / module.get("path", "") / "config.json"
            if not module.get("path") or not config_path.is_file():
                continue
            config = json.loads(config_path.read_text(encoding="utf-8"))
            if "out_features" in config:
                dimension = int(config["out_features"])
            elif "word_embedding_dimension" in config:
                modes = sum(bool(value) for key, value in config.items() if key.startswith("pooling_mode_"))
                dimension = int(config["word_embedding_dimension"]) * max(modes, 1)
        return dimension
    except (OSError, ValueError, TypeError, AttributeError):
        return None
