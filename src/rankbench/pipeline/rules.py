"""Which Snakemake rule makes what, by method type: the only place outside workflow/rules/ that names rules.

A new method type adds its run rule here (and, if it searches an index of its own, the rule that builds it);
workflow/rules/retrieve.smk picks the methods of each rule from RUN_RULES, and the cost page counts the
benchmarks of these rules (pipeline/cost.py).
"""

from __future__ import annotations

# The rule that makes a method's run, by method type.
RUN_RULES = {"bm25": "retrieve_bm25", "dense": "retrieve_dense", "rrf": "fuse", "combsum": "fuse", "combmnz": "fuse",
             "rerank": "rerank", "external": "import_run"}
# The rule that builds the index a first-stage method searches, by method type (wildcards: see cost.method_stages).
INDEX_RULES = {"bm25": "bm25_index", "dense": "faiss_index"}
# Rules that write no benchmark file: their seconds are not counted (external runs are imported).
UNBENCHMARKED = ("import_run",)
# Embedding rules: the corpus once per (chunker, encoder); the questions once per version and rewrite source.
EMBED_CORPUS, EMBED_QUERIES, EMBED_REWRITTEN_QUERIES = "embed_corpus", "embed_queries", "embed_rewritten_queries"
