"""What an approximate FAISS index costs: its recall@k against the exact index on the same queries."""

import numpy as np

from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.dense import (
    IndexSpec,
    load_index,
    recall_against_exact,
    search,
    write_recall,
)
from rankbench.retrieval.vector_checks import check_same_dimension


def main(snakemake):
    queries = np.load(snakemake.input.queries)
    spec = IndexSpec(**snakemake.params.index)
    depth = max(snakemake.params.ks)
    index = load_index(snakemake.input.index)
    check_same_dimension(queries, index.d, snakemake.input.queries, snakemake.input.index)
    approximate, _ = search(index, queries, depth, spec)
    exact, _ = search(load_index(snakemake.input.exact), queries, depth)
    write_recall(recall_against_exact(approximate, exact, snakemake.params.ks),
                 f"Recall of {snakemake.wildcards.method} ({spec.name}) against the exact index",
                 f"Question-set version {snakemake.wildcards.qset}; search parameters: ef_search {spec.ef_search} "
                 f"(HNSW explores max(ef_search, k) candidates), nprobe {spec.nprobe} (IVF).",
                 snakemake.output.recall, snakemake.output.table)


run_script(main, snakemake)
