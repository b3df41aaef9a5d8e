"""Which Snakemake rule makes what, by method type: the only place outside workflow/rules/ that names rules.

A new method type adds its run rule here (and, if it searches an index of its own, the rule that builds it);
workflow/rules/retrieve.smk picks the methods of each rule from RUN_RULES, and the cost page counts the
benchmarks of these rules (pipeline/cost.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The rule that makes a method's run, by method type.
RUN_RULES = {"bm25": "retrieve_bm25", "dense": "retrieve_dense", "sparse": "retrieve_sparse", "rrf": "fuse",
             "combsum": "fuse", "combmnz": "fuse", "rerank": "rerank", "external": "import_run"}
# Rules that write no benchmark file: their seconds are not counted (external runs are imported).
UNBENCHMARKED = ("import_run",)
# Embedding rules: the corpus once per (chunker, encoder); the questions once per version and rewrite source.
EMBED_CORPUS, EMBED_QUERIES, EMBED_REWRITTEN_QUERIES = "embed_corpus", "embed_queries", "embed_rewritten_queries"
# Sparse encoding: the questions once per version and rewrite source (the corpus is encoded by its index rule).
SPARSE_QUERIES, SPARSE_REWRITTEN_QUERIES = "sparse_queries", "sparse_rewritten_queries"

Stage = tuple[str, str, dict[str, str]]  # (rule, side: index | query, wildcards)


def encoding_stages(spec: Mapping[str, Any], chunker: str, encoder: str) -> list[Stage]:
    """The jobs that encode the corpus and the questions with one of a method's encoders (a sparse method's
    corpus is encoded by its index rule, see index_stage)."""
    rewrite = spec.get("rewrite")
    if spec["type"] == "sparse":
        if rewrite:
            return [(SPARSE_REWRITTEN_QUERIES, "query", {"encoder": encoder, "rewrite": rewrite})]
        return [(SPARSE_QUERIES, "query", {"encoder": encoder})]
    corpus: Stage = (EMBED_CORPUS, "index", {"chunker": chunker, "encoder": encoder})
    if rewrite:
        return [corpus, (EMBED_REWRITTEN_QUERIES, "query", {"encoder": encoder, "rewrite": rewrite})]
    return [corpus, (EMBED_QUERIES, "query", {"encoder": encoder})]


def index_stage(spec: Mapping[str, Any], chunker: str, index: str) -> tuple[str, dict[str, str]] | None:
    """The rule and wildcards of the job that builds the index a method searches (named `index`), or None."""
    if spec["type"] == "bm25":
        return "bm25_index", {"chunker": chunker, "method": index}
    if spec["type"] == "dense":
        return "faiss_index", {"chunker": chunker, "encoder": spec["encoder"], "index": index}
    if spec["type"] == "sparse":
        return "sparse_index", {"chunker": chunker, "encoder": spec["encoder"]}
    return None
