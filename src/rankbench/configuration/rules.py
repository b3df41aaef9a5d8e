"""The Snakemake jobs a method's run needs, from its type's rules in the registry (retrieval/registry.py): the
cost page counts their benchmarks (records/cost.py) and each type's rules file (workflow/rules/methods/) picks the
methods of its run rule from RUN_RULES.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankbench.retrieval.registry import METHOD_TYPES, builds_index, method_type, reads_existing_index

# The rule that makes a method's run, by method type (the registry's `run_rule`).
RUN_RULES = {name: kind.run_rule for name, kind in METHOD_TYPES.items()}
# Rules that write no benchmark file: their seconds are not counted (external runs are imported).
UNBENCHMARKED = ("import_run",)

Stage = tuple[str, str, dict[str, str]]  # (rule, side: index | query, wildcards)


def encoding_stages(spec: Mapping[str, Any], chunker: str, encoder: str) -> list[Stage]:
    """The jobs that encode the corpus and the questions with one of a method's encoders (a type whose index rule
    encodes the corpus, as sparse's does, or that searches an existing index, has no corpus stage)."""
    rewrite, encoding = spec.get("rewrite"), method_type(spec).encoding
    stages: list[Stage] = []
    if encoding.corpus and not reads_existing_index(spec):
        stages.append((encoding.corpus, "index", {"chunker": chunker, "encoder": encoder}))
    if rewrite:
        return [*stages, (encoding.rewritten_queries, "query", {"encoder": encoder, "rewrite": rewrite})]
    return [*stages, (encoding.queries, "query", {"encoder": encoder})]


def index_stage(spec: Mapping[str, Any], chunker: str, index: str) -> tuple[str, dict[str, str]] | None:
    """The rule and wildcards of the job that builds the index a method searches (named `index`), or None."""
    stage = method_type(spec).index
    if stage is None or not builds_index(spec):
        return None
    values: dict[str, Any] = {"chunker": chunker, "encoder": spec.get("encoder"), "method": index, "index": index}
    return stage.rule, {wildcard: values[wildcard] for wildcard in stage.wildcards}
