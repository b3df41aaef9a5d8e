"""The config's defaults, one table, and the effective config: every default filled in, grids expanded.

Defaults live here (results, dataset, evaluation, report, the LLM stage, encoder shards), in the method-type
registry (retrieval/registry.py: keys of each method type) and in the library's spec classes the registry and
this table name (BM25, RM3, FAISS index, encoder, chunker, chat backend). workflow/schemas/config.schema.yaml
repeats each as `default:` (tests/configuration/test_defaults.py keeps them equal); the rules read them from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import yaml

from rankbench.corpus.chunking import ChunkerSpec, chunker_settings
from rankbench.llm.chat import BACKEND_DEFAULTS
from rankbench.report.tables import MIN_GROUP
from rankbench.retrieval.encoders.base import EncoderSpec
from rankbench.retrieval.encoders.kinds import encoder_kind
from rankbench.retrieval.registry import METHOD_TYPES, hook, method_defaults, method_type

RESULTS = "results"
# What rankbench itself writes directly under the results folder, beside a folder per dataset and per study.
HISTORY_FILE = "history.jsonl"  # every run's headline figures, shared by the datasets of the results folder
RESULTS_ENTRIES = (HISTORY_FILE,)
# What rankbench itself writes directly under results/<dataset>/, beside a folder per question-set version.
DATASET_ENTRIES = ("benchmarks", "cache", "corpus", "diffs", "history", "history.html", "history.md", "history.png",
                   "history.svg", "index.html", "llm", "logs", "timings")
DATASET_DEFAULTS: dict[str, Any] = {"language": "english"}
EVALUATION_DEFAULTS: dict[str, Any] = {
    "depth": 100, "ks": [1, 3, 5, 10], "relevance_threshold": 1, "gain": "linear", "baseline": None,
    "bootstrap_resamples": 10_000, "seed": 0, "metrics": [], "rbp_p": 0.8, "tokenizer": "auto",
}
REPORT_DEFAULTS: dict[str, Any] = {
    "grain": "document", "headline": ["ndcg@10", "rr@10", "recall@10", "hit@1"], "plot_metric": "rr@10",
    "ci": False, "alpha": 0.05, "columns": [], "comparisons": "baseline", "audience": "all",
    "min_group": MIN_GROUP,
}
# Thresholds of the "What to do" rules (analysis/decision.py; docs/concepts/report.md has the rule table). No latency
# budget by default: the reranker rule then cites the cost and leaves the budget to the reader.
DECISION_DEFAULTS: dict[str, Any] = {"latency_budget_ms": None, "low_score": 0.3, "rerank_gain": 0.05}
# The recommended configuration's abstention target (analysis/recommend.py: t1 loses at most `answerable_lost`, t2
# catches `unanswerable_caught`).
ABSTENTION_TARGET_DEFAULTS: dict[str, Any] = {"unanswerable_caught": 0.5, "answerable_lost": 0.1}
# The serving probe (records/serving.py): on, how many of a version's questions it times one at a time, on how many
# CPU threads.
COST_DEFAULTS: dict[str, Any] = {"probe": True, "probe_questions": 100, "probe_threads": 1}
# A method's `abstention` block (analysis/calibration.py's zones): the score it compares with the zones.
ABSTENTION_DEFAULTS: dict[str, Any] = {"signal": "top1"}
LLM_DEFAULTS: dict[str, dict[str, Any]] = {"generate": {"count": 20, "seed": 0, "qid_prefix": "g"},
                                           "judge": {"depth": 5}, "expand": {"questions": 3}}
# A chat block names its backend (the schema requires it); the rest defaults to the library's.
CHAT_DEFAULTS: dict[str, Any] = {key: value for key, value in BACKEND_DEFAULTS.items() if key != "backend"}
# Corpus embedding jobs per encoder (contiguous slices of the chunks).
ENCODER_SHARDS = 1


def _spec_defaults(spec_class: type) -> dict[str, Any]:
    return {field.name: field.default for field in dataclasses.fields(spec_class)}


ENCODER_DEFAULTS: dict[str, Any] = {**_spec_defaults(EncoderSpec), "shards": ENCODER_SHARDS}
CHUNKER_DEFAULTS: dict[str, Any] = _spec_defaults(ChunkerSpec)


def evaluation_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The `evaluation` block with defaults filled in and ks sorted."""
    settings = {**EVALUATION_DEFAULTS, **config.get("evaluation", {})}
    settings["ks"] = sorted(set(settings["ks"]))
    return settings


def abstention_target(config: Mapping[str, Any]) -> dict[str, float]:
    """`abstention.target` with its defaults filled in."""
    return {**ABSTENTION_TARGET_DEFAULTS, **config.get("abstention", {}).get("target", {})}


def encoder_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An encoder block with defaults filled in (`model` only for a kind whose table row has a default model)."""
    if encoder_kind(spec).sparse:
        return {**{key: value for key, value in _spec_defaults(encoder_kind(spec).spec).items() if key != "model"},
                **spec}
    defaults = ENCODER_DEFAULTS if encoder_kind(spec).default_model else \
        {key: value for key, value in ENCODER_DEFAULTS.items() if key != "model"}
    return {**defaults, **spec}


def chat_settings(chat: Mapping[str, Any]) -> dict[str, Any]:
    """A chat block with the backend's defaults filled in."""
    return {**CHAT_DEFAULTS, **chat}


def method_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A method's config with its type's defaults and the library's (the registry's `settings` hook) filled in."""
    settings = method_defaults(spec)
    settings_hook = method_type(spec).settings
    if settings_hook:
        settings.update(hook(settings_hook)(spec))
    if isinstance(settings.get("scorer"), Mapping) and "chat" in settings["scorer"]:
        settings["scorer"] = {**settings["scorer"], "chat": chat_settings(settings["scorer"]["chat"])}
    if "abstention" in spec:
        settings["abstention"] = {**ABSTENTION_DEFAULTS, **spec["abstention"]}
    return settings


def config_defaults() -> dict[str, Any]:
    """Every default of the config in its shape ("*": any name under `methods`, `encoders`, ...); a method key's
    from the registry or, through the type's `settings`, the library: what the schema's `default:` values repeat."""
    from rankbench.retrieval.bm25 import RM3  # `prf` has defaults only once set: none of a plain bm25 method's
    from rankbench.retrieval.dense import IndexSpec  # every index kind's defaults, where a flat one shows its kind
    from rankbench.retrieval.vectordb import Collection  # `collection` likewise (a vectordb method's)

    methods: dict[str, Any] = {}
    for name in METHOD_TYPES:
        methods.update(method_settings({"type": name}))
    del methods["type"]
    methods.update(prf=_spec_defaults(RM3), abstention=ABSTENTION_DEFAULTS, index=_spec_defaults(IndexSpec),
                   scorer={"chat": CHAT_DEFAULTS},
                   collection={key: value for key, value in _spec_defaults(Collection).items()
                               if value is not dataclasses.MISSING})
    return {"results": RESULTS, "dataset": DATASET_DEFAULTS, "chunkers": {"*": CHUNKER_DEFAULTS},
            "encoders": {"*": ENCODER_DEFAULTS}, "methods": {"*": methods}, "evaluation": EVALUATION_DEFAULTS,
            "report": REPORT_DEFAULTS, "decision": DECISION_DEFAULTS, "cost": COST_DEFAULTS,
            "abstention": {"target": ABSTENTION_TARGET_DEFAULTS}, "llm": {"chat": CHAT_DEFAULTS, **LLM_DEFAULTS}}


def effective_config(config: Mapping[str, Any], methods: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The config as the run uses it: every default filled in and `methods` as check_config expands them.

    A first-stage method's chunker is the default `chunker` unless it names one; settings without a default
    (e.g. `evaluation.baseline`) stay absent. The result passes the config schema again.
    """
    effective = {**config, "results": config.get("results", RESULTS),
                 "dataset": {**DATASET_DEFAULTS, **config["dataset"]},
                 "evaluation": evaluation_settings(config),
                 "report": {**REPORT_DEFAULTS, **config.get("report", {})},
                 "decision": {**DECISION_DEFAULTS, **config.get("decision", {})},
                 "abstention": {"target": abstention_target(config)},
                 "cost": {**COST_DEFAULTS, **config.get("cost", {})},
                 "chunkers": {name: {**CHUNKER_DEFAULTS, **chunker_settings(spec)}
                              for name, spec in config["chunkers"].items()},
                 "encoders": {name: encoder_settings(spec) for name, spec in config.get("encoders", {}).items()},
                 "methods": {name: method_settings(spec) for name, spec in methods.items()}}
    for spec in effective["methods"].values():
        if "chunker" in method_type(spec).keys:
            spec.setdefault("chunker", config["chunker"])
    if "llm" in config:
        llm = effective["llm"] = {**config["llm"], "chat": chat_settings(config["llm"]["chat"])}
        for task, defaults in LLM_DEFAULTS.items():
            if task in llm:
                llm[task] = {**defaults, **llm[task]}
    return _without_none(effective)


def config_yaml(config: Mapping[str, Any]) -> str:
    """A config as YAML with sorted keys, block style: the same config gives the same text."""
    return yaml.safe_dump(dict(config), sort_keys=True, allow_unicode=True, default_flow_style=False, width=120)


def _without_none(value: Any) -> Any:
    """Mappings with None values dropped and keys sorted, all the way down (None means unset in a config)."""
    if isinstance(value, Mapping):
        return {key: _without_none(item) for key, item in sorted(value.items()) if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value
