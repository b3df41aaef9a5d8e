"""The axes a version's grid varies, each decided by analysis/recommend.py's rule, and the configuration they make:
method family, rerank depth, vector size, chunker, k sent to the prompt and abstention thresholds. An axis the grid
does not vary (fewer than two options) is not decided and not shown."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.analysis.recommend import (
    FAMILY_COST,
    Decision,
    Option,
    Thresholds,
    abstention_thresholds,
    choose,
    question_values,
)
from rankbench.retrieval.registry import METHOD_TYPES

EVIDENCE_GRAIN = "evidence"
VECTOR_AXIS = "vector size ("  # one decision per float twin: "vector size (<twin>)"
_POINT = re.compile(r"^(?P<base>.+)\[(?P<point>[^\[\]]*)\]$")


@dataclass(frozen=True)
class RunTables:
    """What one version's recommendation reads. `values`: the per-question table (method, qid, grain, metric, k,
    value) of every method, evidence grain included; `methods`: the expanded methods with their settings filled in;
    `chunkers`: chunk-grain method -> its chunker;
    `chunker_specs`: expanded chunker name -> its settings; `index_stats`: dense method -> its index size record
    (bytes, dimensions); `twins`: compressed dense method -> its float flat twin; `top1`: the calibration page's
    top-1 scores (method, qid, answerable, score) or None; `settings`: grain, headline [(metric, k)], ks, margins
    {(metric, k): δ}, alpha, seed, resamples, target {unanswerable_caught, answerable_lost}."""

    values: pd.DataFrame
    methods: Mapping[str, Mapping[str, Any]]
    chunkers: Mapping[str, str]
    chunker_specs: Mapping[str, Mapping[str, Any]]
    index_stats: Mapping[str, Mapping[str, Any]]
    twins: Mapping[str, str | None]
    top1: pd.DataFrame | None
    settings: Mapping[str, Any]


@dataclass(frozen=True)
class Recommendation:
    """Every decided (or undecided) axis in the order shown, the method the configuration keeps, the chunker it
    applies, the abstention thresholds (None: no method scores abstention; `abstention_note` says why none are
    proposed) and `swaps`: each float twin -> the compressed index chosen for it (the methods consuming the twin
    take it instead)."""

    decisions: tuple[Decision, ...]
    method: str
    chunker: str | None = None
    thresholds: Thresholds | None = None
    abstention_note: str = ""
    swaps: Mapping[str, str] = field(default_factory=dict)

    @property
    def undecided(self) -> list[str]:
        """The axes not decided (an abstention target not met on held-out questions counts)."""
        return [d.axis for d in self.decisions if d.chosen is None]


def per_question(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Every method's per-question table (metrics/<method>.parquet and evidence/<method>.parquet: named after the
    method) as one long table with a method column."""
    frames = [pd.read_parquet(path).assign(method=Path(path).stem) for path in paths]
    return pd.concat(frames, ignore_index=True)


def family_of(method: str, methods: Mapping[str, Mapping[str, Any]]) -> str:
    """The registry family of a method."""
    return METHOD_TYPES[methods[method]["type"]].family


def margin_for(settings: Mapping[str, Any], metric: str, k: int) -> tuple[float, str]:
    """δ for an axis decided on metric@k: its own `evaluation.margin`, else recall@k's for evidence recall, else the
    first headline metric's (said in the note), else 0 (no margin: a cheaper option must be shown above)."""
    margins = settings["margins"]
    head = tuple(settings["headline"][0])
    for key, note in (((metric, k), ""), (("recall", k), f"δ of recall@{k}"), (head, f"δ of {head[0]}@{head[1]}")):
        if key in margins:
            return float(margins[key]), note if key != (metric, k) else ""
    return 0.0, "no evaluation.margin: a cheaper option is chosen only when shown above the best"


def _decide(tables: RunTables, axis: str, options: Sequence[Option], grain: str, metric: str, k: int,
            note: str = "") -> Decision | None:
    """The axis decided on metric@k at its margin; None when fewer than two questions have a value for every
    option (nothing to compare on)."""
    margin, why = margin_for(tables.settings, metric, k)
    values = question_values(tables.values, [o.method for o in options], grain, metric, k)
    if values.shape[1] < 2:
        return None
    settings = tables.settings
    return choose(axis, f"{metric}@{k}", options, values, margin, settings["alpha"], settings["resamples"],
                  settings["seed"], "; ".join(text for text in (note, why) if text))


def _means(tables: RunTables, grain: str, metric: str, k: int) -> pd.Series:
    rows = tables.values[(tables.values["grain"] == grain) & (tables.values["metric"] == metric)
                         & (tables.values["k"] == k)]
    return rows.groupby("method")["value"].mean()


def family_axis(tables: RunTables) -> Decision | None:
    """The method family: each family's best member by the first headline metric, ordered by FAMILY_COST."""
    grain, (metric, k) = tables.settings["grain"], tables.settings["headline"][0]
    means = _means(tables, grain, metric, k)
    best: dict[str, str] = {}
    for method in means.sort_values(ascending=False, kind="stable").index:
        best.setdefault(family_of(str(method), tables.methods), str(method))
    if len(best) < 2:
        return None
    options = [Option(method, method, (float(FAMILY_COST.index(family)),), detail=family)
               for family, method in best.items()]
    return _decide(tables, "method family", options, grain, metric, k, "each family's best method")


def grid_point(method: str) -> tuple[str, dict[str, str]] | None:
    """A grid point's base name and values (`bm25+rerank-e5[depth=20]` -> (`bm25+rerank-e5`, {depth: 20}))."""
    match = _POINT.match(method)
    if not match:
        return None
    return match["base"], dict(item.split("=", 1) for item in match["point"].split(","))


def _reranks_at_depth(type_name: str) -> bool:
    """A type that reorders the top `depth` of the run it consumes (a reranker): its registry entry reads both."""
    method_type = METHOD_TYPES[type_name]
    return method_type.inputs_key is not None and "depth" in method_type.keys


def depth_axes(tables: RunTables) -> list[Decision]:
    """Rerank depth: the points of a rerank grid over `depth` (the other grid keys fixed) are one decision."""
    grain, (metric, k) = tables.settings["grain"], tables.settings["headline"][0]
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[int, str]]] = {}
    for method in tables.methods:
        point = grid_point(method)
        if point and _reranks_at_depth(tables.methods[method]["type"]) and "depth" in point[1]:
            rest = tuple(sorted((key, value) for key, value in point[1].items() if key != "depth"))
            groups.setdefault((point[0], rest), []).append((int(point[1]["depth"]), method))
    decisions: list[Decision | None] = []
    for (base, _), members in sorted(groups.items()):
        if len(members) > 1:
            options = [Option(f"depth {depth}", method, (float(depth),), {"depth": float(depth)}, detail=method)
                       for depth, method in members]
            decisions.append(_decide(tables, f"rerank depth ({base})", options, grain, metric, k))
    return [d for d in decisions if d]


def _index_detail(spec: Mapping[str, Any], stats: Mapping[str, Any]) -> str:
    index = spec.get("index") or {}
    codes = index.get("quantization") or "float32"
    rescore = f", top {index['rescore']} re-scored" if index.get("rescore") else ""
    return f"{codes}, {stats['dimensions']} dims{rescore}"


def vector_axes(tables: RunTables) -> list[Decision]:
    """Vector size: a float flat index and every compression of it (dimensions, int8/binary/PQ codes, re-scoring),
    ordered by index bytes, then re-scoring depth, then dimensions."""
    grain, (metric, k) = tables.settings["grain"], tables.settings["headline"][0]
    groups: dict[str, list[str]] = {}
    for method, twin in sorted(tables.twins.items()):
        if twin and twin in tables.index_stats and method in tables.index_stats:
            groups.setdefault(twin, [twin]).append(method)
    decisions: list[Decision | None] = []
    for twin, members in sorted(groups.items()):
        options = []
        for method in members:
            stats, index = tables.index_stats[method], tables.methods[method].get("index") or {}
            cost = (float(stats["bytes"]), float(index.get("rescore") or 0), float(stats["dimensions"]))
            options.append(Option(_index_detail(tables.methods[method], stats), method, cost,
                                  {"bytes": float(stats["bytes"])}, detail=method))
        decisions.append(_decide(tables, f"{VECTOR_AXIS}{twin})", options, grain, metric, k))
    return [d for d in decisions if d]


def _without(spec: Mapping[str, Any], keys: Sequence[str]) -> str:
    return repr(sorted((key, repr(value)) for key, value in spec.items() if key not in keys))


def has_evidence(tables: RunTables, methods: Sequence[str]) -> bool:
    """Every method has per-question evidence-grain values (labels carry evidence)."""
    found = set(tables.values.loc[tables.values["grain"] == EVIDENCE_GRAIN, "method"])
    return bool(methods) and set(methods) <= found


def _recall(tables: RunTables, methods: Sequence[str]) -> tuple[str, str]:
    """(grain, metric) of the recall a prompt's chunks are judged by: evidence recall where the labels carry
    evidence, else recall at chunk grain."""
    return (EVIDENCE_GRAIN, "evidence_recall") if has_evidence(tables, methods) else ("chunk", "recall")


def _tokens(tables: RunTables, method: str, k: int) -> float:
    rows = tables.values[(tables.values["method"] == method) & (tables.values["metric"] == "prompt_tokens")
                         & (tables.values["k"] == k)]
    return float(rows["value"].mean()) if len(rows) else np.nan


def chunker_axes(tables: RunTables) -> list[Decision]:
    """Chunker and its size: methods equal but for their chunker are one decision, on evidence recall (else recall)
    at the headline k, ordered by the prompt tokens of those chunks (else the chunk size)."""
    k = tables.settings["headline"][0][1]
    groups: dict[str, list[str]] = {}
    for method in sorted(tables.chunkers):
        spec = tables.methods[method]
        if "chunker" in METHOD_TYPES[spec["type"]].keys:
            groups.setdefault(_without(spec, ("chunker", "description", "abstention")), []).append(method)
    decisions: list[Decision | None] = []
    for members in groups.values():
        if len({tables.chunkers[m] for m in members}) < 2:
            continue
        grain, metric = _recall(tables, members)
        options = []
        for method in members:
            tokens = _tokens(tables, method, k)
            size = tables.chunker_specs.get(tables.chunkers[method], {}).get("size")
            cost = (tokens,) if np.isfinite(tokens) else (float(size) if size else np.inf,)
            options.append(Option(tables.chunkers[method], method, cost,
                                  {"tokens": tokens, "size": float(size) if size else np.inf}, detail=method))
        decisions.append(_decide(tables, f"chunker ({members[0]})", options, grain, metric, k))
    return [d for d in decisions if d]


def k_axis(tables: RunTables, method: str) -> Decision | None:
    """k sent to the prompt: the smallest k of evaluation.ks whose (evidence) recall is no worse than the largest
    k's by δ, for the recommended method, with the prompt tokens of each k."""
    ks = sorted(tables.settings["ks"])
    if len(ks) < 2 or method not in tables.chunkers:
        return None
    grain, metric = _recall(tables, [method])
    options = [Option(f"k = {k}", method, (float(k),), {"tokens": _tokens(tables, method, k), "k": float(k)})
               for k in ks]
    values = np.vstack([question_values(tables.values, [method], grain, metric, k) for k in ks])
    if values.shape[1] < 2:
        return None
    margin, why = margin_for(tables.settings, metric, ks[-1])
    settings = tables.settings
    return choose("k for the prompt", f"{metric}@k", options, values, margin, settings["alpha"],
                  settings["resamples"], settings["seed"], why)


def _kept(decisions: Sequence[Decision], method: str) -> str:
    """The method after the axes that refine it (a rerank depth, a compression of its index) are applied."""
    for decision in decisions:
        if method in {o.method for o in decision.options} and not decision.axis.startswith(("method", "chunker")):
            return decision.kept.method
    return method


def recommend(tables: RunTables) -> Recommendation:
    """The recommended configuration of a version: every axis decided in turn, the k and the abstention thresholds
    on the method the configuration keeps."""
    grain, (metric, k) = tables.settings["grain"], tables.settings["headline"][0]
    family = family_axis(tables)
    decisions = [d for d in [family, *depth_axes(tables), *vector_axes(tables), *chunker_axes(tables)] if d]
    if family is not None:
        method = family.kept.method
    else:
        means = _means(tables, grain, metric, k)
        method = str(sorted(means.items(), key=lambda item: (-item[1], item[0]))[0][0])
    method = _kept(decisions, method)
    chunker = next((d.kept.label for d in decisions if d.axis.startswith("chunker") and d.chosen), None)
    prompt = k_axis(tables, method)
    if prompt is not None:
        decisions.append(prompt)
    thresholds, note = _abstention(tables, decisions, method)
    swaps = {d.axis[len(VECTOR_AXIS):-1]: d.kept.method for d in decisions
             if d.axis.startswith(VECTOR_AXIS) and d.chosen}
    return Recommendation(tuple(decisions), method, chunker, thresholds, note,
                          {twin: chosen for twin, chosen in swaps.items() if twin != chosen})


def _abstention(tables: RunTables, decisions: Sequence[Decision], method: str) -> tuple[Thresholds | None, str]:
    """Thresholds for the target on the recommended method's top-1 score when the version scores abstention (a
    method sets zones), else on the kept option of the method that sets them (grid siblings are one decision); the
    note says why none are proposed."""
    scoring = sorted(m for m, spec in tables.methods.items() if "abstention" in spec)
    if tables.top1 is None or not scoring:
        return None, ""
    scored = set(tables.top1["method"])
    chosen = method if method in scored else _kept(decisions, scoring[0])
    scores = tables.top1[tables.top1["method"] == chosen]
    if not (~scores["answerable"].astype(bool)).any():
        return None, ("no unanswerable question in this version: nothing measures what an abstention threshold "
                      "catches (add questions whose answer is not in the documents)")
    target = tables.settings["target"]
    found = abstention_thresholds(chosen, scores, target["unanswerable_caught"], target["answerable_lost"])
    return found, ""
