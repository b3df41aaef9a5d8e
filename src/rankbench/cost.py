"""Cost beside quality: seconds per stage of a method (its own and its inputs') from Snakemake benchmark files."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.config import method_inputs
from rankbench.errors import InputError

# The rule that makes a method's run, by method type (external runs are imported: no benchmark).
RUN_RULES = {"bm25": "retrieve_bm25", "dense": "retrieve_dense", "rrf": "fuse_rrf", "rerank": "rerank"}
COST_COLUMNS = ["method", "index_s", "query_s", "questions", "ms_per_question", "stages"]

Stage = tuple[str, str, dict[str, str]]  # (rule, side: index | query, wildcards)


def _encoder_stages(encoder: str, chunker: str) -> list[Stage]:
    return [("embed_corpus", "index", {"chunker": chunker, "encoder": encoder}),
            ("faiss_index", "index", {"chunker": chunker, "encoder": encoder}),
            ("embed_queries", "query", {"encoder": encoder})]


def method_stages(methods: Mapping[str, Mapping[str, Any]], method: str, chunker_of: Callable[[str], str]
                  ) -> list[Stage]:
    """Every benchmarked job a method's run needs: its own, its encoders' and indexes', and its inputs' (recursively).

    Index-side stages are built once per corpus; query-side stages run once per question-set version. A stage
    shared by two methods (e.g. the query embeddings of one encoder) is counted in full for each.
    """
    spec, chunker = methods[method], chunker_of(method)
    stages: list[Stage] = []
    if spec["type"] == "bm25":
        stages.append(("bm25_index", "index", {"chunker": chunker, "method": method}))
    if spec["type"] == "dense":
        stages += _encoder_stages(spec["encoder"], chunker)
    if spec["type"] == "rerank" and spec["scorer"]["kind"] == "bi-encoder":
        stages += [s for s in _encoder_stages(spec["scorer"]["encoder"], chunker) if s[0] != "faiss_index"]
    if spec["type"] in RUN_RULES:
        stages.append((RUN_RULES[spec["type"]], "query", {"method": method}))
    for name in method_inputs(spec):
        stages += method_stages(methods, name, chunker_of)
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


def cost_table(plan: Mapping[str, Sequence[Sequence[str]]], seconds: Mapping[str, float], n_questions: int
               ) -> pd.DataFrame:
    """Per method: index-side seconds, query-side seconds and milliseconds per question, and the stages counted.

    plan maps a method to its stages as (label, side, benchmark path); seconds maps a path to its seconds.
    """
    rows = []
    for method, stages in sorted(plan.items()):
        index_s = sum(seconds[path] for _, side, path in stages if side == "index")
        query_s = sum(seconds[path] for _, side, path in stages if side == "query")
        counted = [label for label, side, _ in stages if side == "query"] + \
                  [f"{label} (index)" for label, side, _ in stages if side == "index"]
        rows.append({"method": method, "index_s": index_s if stages else float("nan"),
                     "query_s": query_s if stages else float("nan"), "questions": n_questions,
                     "ms_per_question": 1000 * query_s / n_questions if stages and n_questions else float("nan"),
                     "stages": ", ".join(counted)})
    return pd.DataFrame(rows, columns=COST_COLUMNS)
