"""Cost beside quality: per method (its own jobs and its inputs'), seconds per question of its query-side work from
the jobs' timing records, one-time seconds and index-side seconds from Snakemake benchmark files."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.configuration.rules import UNBENCHMARKED, Stage, encoding_stages, index_stage
from rankbench.errors import InputError
from rankbench.retrieval.registry import method_encoders, method_inputs, method_type

COST_COLUMNS = ["method", "index_s", "query_s", "questions", "p50_ms", "p95_ms", "onetime_s", "batched", "cached",
                "calls", "call_tokens", "stages", "index_tokens", "query_tokens", "index_sent", "query_sent"]


def method_stages(methods: Mapping[str, Mapping[str, Any]], method: str, chunker_of: Callable[[str], str],
                  index_name: Callable[[str], str]) -> list[Stage]:
    """Every benchmarked job a method's run needs: its own, its encoders' and indexes', and its inputs' (recursively).

    Index-side stages are built once per corpus; query-side stages run once per question-set version. A stage
    shared by two methods (e.g. the query embeddings of one encoder) is counted in full for each. index_name
    names the BM25 or FAISS index a first-stage method searches (methods with the same parameters share one).
    """
    spec, chunker = methods[method], chunker_of(method)
    stages: list[Stage] = []
    for encoder in filter(None, method_encoders(spec)):  # every one named (config.check_methods)
        stages += encoding_stages(spec, chunker, encoder)
    index = index_stage(spec, chunker, index_name(method))
    if index:
        stages.append((index[0], "index", index[1]))
    if method_type(spec).run_rule not in UNBENCHMARKED:
        stages.append((method_type(spec).run_rule, "query", {"method": method}))
    for name in method_inputs(spec):
        stages += method_stages(methods, name, chunker_of, index_name)
    unique: dict[tuple, Stage] = {}
    for stage in stages:
        unique.setdefault((stage[0], tuple(sorted(stage[2].items()))), stage)
    return list(unique.values())


def read_benchmark(path: str | Path) -> float:
    """Wall-clock seconds of one benchmark file (the mean over its repeats)."""
    try:
        seconds = pd.read_csv(path, sep="\t")["s"]
    except (OSError, KeyError, ValueError, pd.errors.ParserError) as error:
        raise InputError(path, None, f"is not a Snakemake benchmark file ({error})",
                         "Delete it and rerun the rule that writes it.") from None
    return float(seconds.mean())


def cost_table(plan: Mapping[str, Sequence[Sequence[str]]], seconds: Mapping[str, float], n_questions: int,
               usage: Mapping[str, Mapping[str, Any]] | None = None,
               timings: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Per method: index-side and query-side job seconds, the p50/p95 milliseconds of a question's query-side work
    and the one-time seconds around it, and the stages counted; with `usage` (benchmark path -> usage record of an
    embedding-API job), the tokens billed and texts sent per side; with `timings` (benchmark path -> timing record,
    records/timing.py), the per-question figures and the LLM calls and tokens.

    plan maps a method to its stages as (label, side, benchmark path); seconds maps a path to its seconds. A
    question's work is the sum over the method's query-side jobs of their seconds for it (a job that did nothing
    for it, e.g. a cached query embedding, adds 0); one-time seconds are the jobs' wall-clock seconds minus that work
    (start-up, loading, compiling, reading and writing); `cached`: the most questions one job answered from a cache.
    Per-question figures are NaN unless every query-side job
    wrote a record; tokens and texts are NaN for a side without an API job, tokens also when a server reported none.
    """
    usage, timings = usage or {}, timings or {}
    rows = []
    for method, stages in sorted(plan.items()):
        index_s = sum(seconds[path] for _, side, path in stages if side == "index")
        query_s = sum(seconds[path] for _, side, path in stages if side == "query")
        counted = dict.fromkeys([label for label, side, _ in stages if side == "query"] +
                                [f"{label} (index)" for label, side, _ in stages if side == "index"])
        row = {"method": method, "index_s": index_s if stages else float("nan"),
               "query_s": query_s if stages else float("nan"), "questions": n_questions,
               "stages": ", ".join(counted)}
        row.update(_per_question([timings.get(path) for _, side, path in stages if side == "query"], query_s))
        for which in ("index", "query"):
            records = [usage[path] for _, side, path in stages if side == which and path in usage]
            tokens = [record["tokens"] for record in records]
            row[f"{which}_sent"] = sum(record["sent"] for record in records) if records else float("nan")
            row[f"{which}_tokens"] = sum(tokens) if records and None not in tokens else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def _per_question(found: list[Mapping[str, Any] | None], query_s: float) -> dict[str, Any]:
    """p50/p95 ms of a question's work summed over a method's query-side jobs, the one-time seconds, calls, tokens."""
    records = [record for record in found if record is not None]
    if not found or len(records) < len(found):
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "onetime_s": float("nan"), "batched": False,
                "cached": 0, "calls": float("nan"), "call_tokens": float("nan")}
    work = pd.concat([pd.Series(record["questions"], dtype=np.float64) for record in records], axis=1).fillna(0.0)
    per_question = work.sum(axis=1).to_numpy()
    tokens = [record.get("tokens", 0) for record in records]
    p50, p95 = (1000 * np.percentile(per_question, [50, 95])) if len(per_question) else (float("nan"),) * 2
    return {"p50_ms": p50, "p95_ms": p95, "onetime_s": max(query_s - float(per_question.sum()), 0.0),
            "batched": any(record.get("batched", False) for record in records),
            "cached": max(record.get("cached", 0) for record in records),
            "calls": sum(record.get("calls", 0) for record in records),
            "call_tokens": float("nan") if None in tokens else sum(tokens)}
