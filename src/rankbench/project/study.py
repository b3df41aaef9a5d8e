"""A study across datasets: the study file read and checked at start, each dataset's config read as a run of that
file alone reads it (so its jobs and outputs are the same), and the plan of the study table as plain values."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankbench.configuration.config import check_paths, check_reserved_name, validate_config
from rankbench.configuration.defaults import RESULTS, RESULTS_ENTRIES
from rankbench.errors import InputError
from rankbench.evaluation.metric_names import MetricNameError, parse_metrics
from rankbench.evaluation.metrics import EXTRA_METRICS_AT_K, EXTRA_METRICS_FULL
from rankbench.io.config_file import read_configs
from rankbench.retrieval.registry import METHOD_TYPES

# The top-level key that makes a config file a study (config/study.yaml) rather than one dataset's config.
STUDY_KEY = "study"
# Set in a dataset's module config by workflow/rules/study.smk: the Snakefile then takes that config as it is and
# names this file in its error messages (a run of the dataset alone reads the file itself).
MEMBER_SOURCE = "__study_member_source__"
STUDY_DEFAULTS: dict[str, Any] = {"grain": "document", "alpha": 0.05}
# The study's outputs, under results/<study name>/.
TABLE_FORMATS = ("md", "tex", "csv", "html")


def is_study(config: Mapping[str, Any]) -> bool:
    """Does this config describe a study (several dataset configs) rather than one dataset?"""
    return STUDY_KEY in config


@dataclass(frozen=True)
class Member:
    """One dataset config of a study, loaded as one Snakemake module (rules named `<prefix><rule>`)."""

    module: str
    prefix: str
    source: str
    config: dict[str, Any]

    def module_config(self) -> dict[str, Any]:
        """The module's config: the dataset config exactly as a run of it alone reads it, plus its source."""
        return {**self.config, MEMBER_SOURCE: self.source}


@dataclass(frozen=True)
class MemberView:
    """What the study plan needs from a loaded dataset module (its common.smk values; drafts: its versions that are
    drafts, not frozen)."""

    source: str
    dataset: str
    results: str
    qsets: Sequence[str]
    method_types: Mapping[str, str]
    evaluation: Mapping[str, Any]
    drafts: Sequence[str] = ()


def _identifier(name: str) -> str:
    """A dataset name as a Snakemake rule-name prefix (letters, digits and _, not starting with a digit)."""
    text = re.sub(r"\W", "_", name, flags=re.ASCII)
    return text if text[:1].isalpha() else f"d_{text}"


def read_members(config: Mapping[str, Any], schema: Mapping[str, Any], source: str) -> dict[str, Member]:
    """The study checked against its schema, and each dataset config it names (a file, read once however many
    columns use it, or an inline mapping), by column label -> Member. Two configs of one dataset are an error:
    they would write the same results folder."""
    validate_config(config, schema, source)
    check_reserved_name(config[STUDY_KEY]["name"], RESULTS_ENTRIES, RESULTS, source, "study.name")
    check_paths(config, schema, source)
    by_source: dict[str, Member] = {}
    members: dict[str, Member] = {}
    for label, entry in config[STUDY_KEY]["datasets"].items():
        where = f"study.datasets.{label}.config"
        if isinstance(entry["config"], str):
            member_source = str(Path(entry["config"]))
            if not Path(member_source).is_file():
                raise InputError(source, where, f"names {member_source!r}, which is not a file",
                                 "Give the path of a dataset config (relative to the working directory).")
            member_config = read_configs([member_source], {})
        else:
            member_source, member_config = f"{source} ({where})", dict(entry["config"])
        if member_source not in by_source:
            name = member_config.get("dataset", {}).get("name") if isinstance(member_config.get("dataset"), dict) \
                else None
            if not isinstance(name, str) or not name:
                raise InputError(member_source, "dataset.name", "is missing",
                                 "Every dataset config of a study names its dataset (see docs/reference/config.md).")
            prefix = _identifier(name) + "_"
            clash = next((m for m in by_source.values() if m.prefix == prefix), None)
            if clash is not None:
                raise InputError(source, where, f"{member_source} and {clash.source} both configure dataset {name!r} "
                                 "(or names that differ only in punctuation); they would write the same results",
                                 "Use one config per dataset in a study (columns may share it: give each its `qset`).")
            by_source[member_source] = Member(f"study_{prefix[:-1]}", prefix, member_source, member_config)
        members[label] = by_source[member_source]
    return members


def _study_metrics(study: Mapping[str, Any], source: str) -> list[tuple[str, int]]:
    """The study's headline metrics parsed to (metric, k)."""
    try:
        return parse_metrics(",".join(study["metrics"]))
    except MetricNameError as error:
        raise InputError(source, "study.metrics", str(error), "Write metrics as name@k, e.g. ndcg@10.") from None


def _method_names(study: Mapping[str, Any], label: str, source: str) -> dict[str, str | None]:
    """Study method -> the dataset's method name (None: it does not run there; the reason is in `skipped`)."""
    names: dict[str, str | None] = {}
    for method, mapping in study["methods"].items():
        if isinstance(mapping, str):
            names[method] = mapping
        elif label not in mapping:
            raise InputError(source, f"study.methods.{method}", f"names no method for dataset column {label!r}",
                             f"Add `{label}: <method name in that dataset's config>`, or `{label}: {{skip: <reason>}}` "
                             "when the method cannot run there.")
        else:
            value = mapping[label]
            names[method] = value if isinstance(value, str) else None
    return names


def study_plan(config: Mapping[str, Any], source: str, views: Mapping[str, MemberView]) -> dict[str, Any]:
    """The study table's plan as plain values: settings, and per column (dataset and question-set version, and
    whether that version is a draft) the per-dataset method names, the reasons a method does not run there, and
    the files each cell reads. Every name is checked against the loaded dataset configs, before any job."""
    study = {**STUDY_DEFAULTS, **config[STUDY_KEY]}
    metrics = _study_metrics(study, source)
    if study["baseline"] not in study["methods"]:
        raise InputError(source, "study.baseline", f"{study['baseline']!r} is not under study.methods",
                         f"Name one of: {', '.join(study['methods'])}.")
    unknown = sorted(set().union(*[set(m) for m in study["methods"].values() if isinstance(m, dict)])
                     - set(study["datasets"]))
    if unknown:
        raise InputError(source, "study.methods", f"maps methods for {', '.join(map(repr, unknown))}, which "
                         "is not under study.datasets",
                         f"Use the dataset column names: {', '.join(study['datasets'])}.")
    clash = sorted({view.dataset for view in views.values()} & {study["name"]})
    if clash:
        raise InputError(source, "study.name", f"{study['name']!r} is also a dataset of the study: its table would be "
                         f"written into results/{study['name']}/", "Give the study another name.")
    columns = []
    for label, entry in study["datasets"].items():
        view = views[label]
        qset = entry.get("qset")
        if qset is None:
            if len(view.qsets) != 1:
                raise InputError(source, f"study.datasets.{label}", f"{view.source} has several question-set "
                                 f"versions ({', '.join(view.qsets)})", "Say which one with `qset:`.")
            qset = view.qsets[0]
        elif qset not in view.qsets:
            raise InputError(source, f"study.datasets.{label}.qset", f"{qset!r} is not a version of {view.source}",
                             f"Use one of: {', '.join(view.qsets)}.")
        names = _method_names(study, label, source)
        for method, name in names.items():
            where = f"study.methods.{method}" + ("" if isinstance(study["methods"][method], str) else f".{label}")
            if name is not None and name not in view.method_types:
                raise InputError(source, where, f"names {name!r}, which {view.source} does not configure "
                                 f"(its methods: {', '.join(view.method_types)})",
                                 "Map the study method to that dataset's method name, or `{skip: <reason>}`.")
            if name is not None and study["grain"] == "chunk" \
                    and "chunk" not in METHOD_TYPES[view.method_types[name]].grains:
                raise InputError(source, where, f"{name!r} is an external run: it ranks documents, with no chunk grain",
                                 "Use `grain: document`, or `{skip: <reason>}` for it.")
        baseline = names[study["baseline"]]
        if baseline is None or baseline != view.evaluation.get("baseline"):
            raise InputError(source, f"study.methods.{study['baseline']}", f"the study baseline is {baseline!r} on "
                             f"{label}, but {view.source} compares with {view.evaluation.get('baseline')!r}",
                             "The significance marks come from each dataset's own tests against its baseline: map "
                             "the study baseline to it, or set that config's evaluation.baseline.")
        requested = set(view.evaluation.get("metrics", []))
        for metric, k in metrics:
            if (k and k not in view.evaluation["ks"]) or (
                    metric in EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL and metric not in requested):
                raise InputError(source, "study.metrics", f"{metric}@{k} is not computed on {label} ({view.source}: "
                                 f"ks {view.evaluation['ks']}, extra metrics {sorted(requested)})",
                                 "Use a metric every dataset computes, or add it to that config's evaluation.")
        folder = f"{view.results}/{qset}"
        ran = {method: name for method, name in names.items() if name is not None}
        columns.append({
            "label": label, "dataset": view.dataset, "qset": qset, "draft": qset in view.drafts,
            "source": view.source, "methods": ran,
            "skipped": {method: study["methods"][method][label]["skip"] for method, name in names.items()
                        if name is None},
            "aggregate": f"{folder}/aggregate.parquet",
            "metrics": {method: f"{folder}/metrics/{name}.parquet" for method, name in ran.items()},
        })
    return {"name": study["name"], "methods": list(study["methods"]), "baseline": study["baseline"],
            "metrics": [list(item) for item in metrics], "grain": study["grain"], "alpha": study["alpha"],
            "columns": columns}


def study_outputs(name: str, metrics: Sequence[Sequence[Any]], results: str = "results") -> dict[str, str]:
    """Every file of the study, by key: the table in each format, the tidy cells, the pooled statistics and one
    forest plot (PNG and SVG) per headline metric."""
    folder = f"{results}/{name}"
    outputs = {fmt: f"{folder}/study.{fmt}" for fmt in TABLE_FORMATS}
    outputs |= {"cells": f"{folder}/study.parquet", "effects": f"{folder}/effects.parquet",
                "pooled": f"{folder}/pooled.parquet"}
    for metric, k in metrics:
        for ext in ("png", "svg"):
            outputs[f"forest_{metric}_{k}_{ext}"] = f"{folder}/plots/forest-{metric}@{k}.{ext}"
    return outputs
