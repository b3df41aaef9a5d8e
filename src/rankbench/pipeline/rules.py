"""Which Snakemake rule makes what, by method type: the only place outside workflow/rules/ that names rules.

A new method type adds its run rule here (and, if it searches an index of its own, the rule that builds it);
workflow/rules/retrieve.smk picks the methods of each rule from RUN_RULES, and the cost page counts the
benchmarks of these rules (pipeline/cost.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The rule that makes a method's run, by method type.
RUN_RULES = {"bm25": "retrieve_bm25", "dense": "retrieve_dense", "rrf": "fuse", "combsum": "fuse", "combmnz": "fuse",
             "rerank": "rerank", "external": "import_run"}
# Rules that write no benchmark file: their seconds are not counted (external runs are imported).
UNBENCHMARKED = ("import_run",)
# Embedding rules: the corpus once per (chunker, encoder); the questions once per version and rewrite source.
EMBED_CORPUS, EMBED_QUERIES, EMBED_REWRITTEN_QUERIES = "embed_corpus", "embed_queries", "embed_rewritten_queries"


def index_stage(spec: Mapping[str, Any], chunker: str, index: str) -> tuple[str, dict[str, str]] | None:
    """The rule and wildcards of the job that builds the index a method searches (named `index`), or None."""
    if spec["type"] == "bm25":
        return "bm25_index", {"chunker": chunker, "method": index}
    if spec["type"] == "dense":
        return "faiss_index", {"chunker": chunker, "encoder": spec["encoder"], "index": index}
    return None
