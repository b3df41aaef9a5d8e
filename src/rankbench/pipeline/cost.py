"""Cost beside quality: seconds per stage of a method (its own and its inputs') from Snakemake benchmark files."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.pipeline.rules import UNBENCHMARKED, Stage, encoding_stages, index_stage
from rankbench.retrieval.registry import method_encoders, method_inputs, method_type

COST_COLUMNS = ["method", "index_s", "query_s", "questions", "ms_per_question", "stages", "index_tokens",
               "query_tokens", "index_sent", "query_sent"]


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
               usage: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Per method: index-side seconds, query-side seconds and milliseconds per question, and the stages counted;
    with `usage` (benchmark path -> usage record of an embedding-API job), the tokens billed and texts sent per side.

    plan maps a method to its stages as (label, side, benchmark path); seconds maps a path to its seconds. Tokens
    and texts are NaN for a side without an API job; tokens also when a job's server reported none.
    """
    usage = usage or {}
    rows = []
    for method, stages in sorted(plan.items()):
        index_s = sum(seconds[path] for _, side, path in stages if side == "index")
        query_s = sum(seconds[path] for _, side, path in stages if side == "query")
        counted = dict.fromkeys([label for label, side, _ in stages if side == "query"] +
                                [f"{label} (index)" for label, side, _ in stages if side == "index"])
        row = {"method": method, "index_s": index_s if stages else float("nan"),
               "query_s": query_s if stages else float("nan"), "questions": n_questions,
               "ms_per_question": 1000 * query_s / n_questions if stages and n_questions else float("nan"),
               "stages": ", ".join(counted)}
        for which in ("index", "query"):
            records = [usage[path] for _, side, path in stages if side == which and path in usage]
            tokens = [record["tokens"] for record in records]
            row[f"{which}_sent"] = sum(record["sent"] for record in records) if records else float("nan")
            row[f"{which}_tokens"] = sum(tokens) if records and None not in tokens else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=COST_COLUMNS)
