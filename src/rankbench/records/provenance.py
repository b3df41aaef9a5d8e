"""What produced a result: the canonical JSON of the config and its hash, and the report's settings with defaults."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from rankbench.configuration.defaults import REPORT_DEFAULTS
from rankbench.errors import InputError
from rankbench.evaluation.metric_names import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRIC_ALIASES,
    METRICS,
    MetricNameError,
    parse_metrics,
)
from rankbench.redaction import redact
from rankbench.retrieval.registry import REPORT_ONLY_KEYS


def canonical_config(config: Mapping[str, Any]) -> str:
    """The config as JSON with sorted keys and no spaces: equal configs give equal text, whatever the YAML order.
    Secrets are redacted: this text reaches the pages, the history and the effective config."""
    return redact(json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str))


def qset_config(config: Mapping[str, Any], qset: str) -> dict[str, Any]:
    """The config as it bears on one version's results: other versions and the diffs left out, so adding a
    version does not touch the tables (or the config hash) of the others."""
    kept = {key: value for key, value in config.items() if key not in ("qsets", "diffs")}
    return {**kept, "qsets": {qset: config["qsets"][qset]}}


def config_hash(canonical: str) -> str:
    """sha256 of the canonical config JSON."""
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def report_settings(config: Mapping[str, Any], ks: list[int], source: str) -> dict[str, Any]:
    """The `report` block with defaults; headline metrics parsed to (metric, k) and kept to the configured ks.

    Default headline metrics whose k is not configured are dropped (a user-given one is an error).
    """
    given = config.get("report", {})
    settings = {**REPORT_DEFAULTS, **given}
    parsed = {}
    for key in ("headline", "plot_metric"):
        names = settings[key] if isinstance(settings[key], list) else [settings[key]]
        try:
            metrics = parse_metrics(",".join(names))
        except MetricNameError as error:
            raise InputError(source, f"report.{key}", str(error), "Write metrics as name@k, e.g. ndcg@10.") from None
        outside = [f"{m}@{k}" for m, k in metrics if k and k not in ks]
        if outside and key in given:
            raise InputError(source, f"report.{key}",
                             f"uses a cut-off that is not in evaluation.ks ({', '.join(outside)})",
                             f"Use one of the configured ks: {ks}.")
        parsed[key] = [(m, k) for m, k in metrics if not k or k in ks] or [("ndcg", max(ks))]
    requested = set(config.get("evaluation", {}).get("metrics", []))
    for key, metrics in parsed.items():
        missing = sorted({m for m, _ in metrics if m in EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL} - requested)
        if missing:
            raise InputError(source, f"report.{key}", f"names {', '.join(missing)}, which is computed only on request",
                             f"Add {', '.join(missing)} to evaluation.metrics.")
    settings["headline"] = [list(item) for item in parsed["headline"]]
    settings["plot_metric"] = list(parsed["plot_metric"][0])
    settings["columns"] = table_columns(settings["columns"], requested, ks, source)
    return dict(sorted(settings.items()))


def margin_settings(config: Mapping[str, Any], ks: list[int], source: str) -> list[list[Any]]:
    """`evaluation.margin` as sorted [metric, k, δ] triples (aliases resolved), each metric at a configured k."""
    margins = []
    for name, delta in sorted(config.get("evaluation", {}).get("margin", {}).items()):
        try:
            (metric, k), = parse_metrics(name)
        except (MetricNameError, ValueError) as error:
            raise InputError(source, f"evaluation.margin.{name}", f"is not one metric ({error})",
                             "Write one metric as name@k, e.g. ndcg@10: 0.02.") from None
        if k and k not in ks:
            raise InputError(source, f"evaluation.margin.{name}", f"uses the cut-off {k}, not in evaluation.ks",
                             f"Use one of the configured ks: {ks}.")
        margins.append([metric, k, float(delta)])
    return margins


def table_columns(names: list[str], requested: set[str], ks: list[int], source: str) -> list[list[Any]]:
    """`report.columns` as [metric, k] pairs (aliases such as map resolved): name@k at that k, a bare name at every
    configured k."""
    columns: list[list[Any]] = []
    for item in names:
        name, _, cut = item.partition("@")
        metric = METRIC_ALIASES.get(name.lower(), name.lower())
        if metric not in METRICS or METRICS[metric].cutoff == "whole" or (cut and not cut.isdigit()):
            known = ", ".join(m for m, spec in METRICS.items() if spec.cutoff != "whole")
            raise InputError(source, "report.columns", f"names {item!r}, which is not a metric reported at k",
                             f"Write name or name@k, the name among: {known}.")
        if cut and int(cut) not in ks:
            raise InputError(source, "report.columns", f"uses a cut-off that is not in evaluation.ks ({item})",
                             f"Use one of the configured ks: {ks}.")
        if metric in EXTRA_METRICS_AT_K and metric not in requested:
            raise InputError(source, "report.columns", f"names {metric}, which is computed only on request",
                             f"Add {metric} to evaluation.metrics.")
        columns += [[metric, int(cut)]] if cut else [[metric, k] for k in ks]
    return [list(pair) for pair in dict.fromkeys(tuple(pair) for pair in columns)]


def diff_pairs(config: Mapping[str, Any], source: str) -> list[tuple[str, str]]:
    """The `diffs` pairs of question-set versions, each naming two configured versions."""
    pairs = []
    for number, (a, b) in enumerate(config.get("diffs", [])):
        unknown = [v for v in (a, b) if v not in config["qsets"]]
        if unknown or a == b:
            raise InputError(source, f"diffs[{number}]", f"compares {a!r} with {b!r}"
                             + (f", but {', '.join(map(repr, unknown))} is not under `qsets`" if unknown else ""),
                             f"Name two different versions of: {', '.join(sorted(config['qsets']))}.")
        pairs.append((a, b))
    return pairs


def method_identities(effective: Mapping[str, Any]) -> dict[str, str]:
    """Per method, sha256 (16 hex digits) of everything its results depend on in the effective config: its own
    settings, its chunker, the encoders it names and its input methods' identities, and the question set and
    evaluation. A config change elsewhere (another method, the report, the note) leaves it unchanged."""
    from rankbench.retrieval.registry import method_inputs

    methods, encoders = effective["methods"], effective.get("encoders", {})
    shared = {key: effective.get(key) for key in ("dataset", "qsets", "evaluation")}
    identities: dict[str, str] = {}

    def named_encoders(value: Any) -> list[str]:
        if isinstance(value, Mapping):
            return [name for item in value.values() for name in named_encoders(item)]
        if isinstance(value, list):
            return [name for item in value for name in named_encoders(item)]
        return [value] if isinstance(value, str) and value in encoders else []

    def identity(method: str) -> str:
        if method not in identities:
            spec = {key: value for key, value in methods[method].items() if key not in REPORT_ONLY_KEYS}
            chunker = spec.get("chunker", effective.get("chunker"))
            inputs = {name: identity(name) for name in method_inputs(spec) if name in methods}
            text = canonical_config({"method": spec, "chunker": effective.get("chunkers", {}).get(chunker),
                                     "encoders": {e: encoders[e] for e in sorted(set(named_encoders(spec)))},
                                     "inputs": inputs, **shared})
            identities[method] = config_hash(text)[:16]
        return identities[method]

    return {method: identity(method) for method in sorted(methods)}


def source_commit() -> str | None:
    """The git commit of the rankbench source in use (None when it is not a git checkout, e.g. an installed wheel)."""
    import subprocess
    from pathlib import Path

    try:
        result = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and len(commit) == 40 else None
