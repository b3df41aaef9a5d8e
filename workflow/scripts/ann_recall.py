"""What an approximate or compressed FAISS index costs: its recall@k against the exact float index on the same
queries."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import numpy as np

from rankbench.execution.scripting import run_script
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
    exact_index = load_index(snakemake.input.exact)
    check_same_dimension(queries, exact_index.d, snakemake.input.queries, snakemake.input.exact)
    vectors = np.load(snakemake.input.vectors) if spec.rescore else None
    approximate, _ = search(index, queries, depth, spec, vectors=vectors)
    exact, _ = search(exact_index, queries, depth)
    write_recall(recall_against_exact(approximate, exact, snakemake.params.ks),
                 f"Recall of {snakemake.wildcards.method} ({spec.name}) against the exact index",
                 f"Question-set version {snakemake.wildcards.qset}; search parameters: ef_search {spec.ef_search} "
                 f"(HNSW explores max(ef_search, k) candidates), nprobe {spec.nprobe} (IVF); dimensions "
                 f"{spec.dimensions or 'all'}, codes {spec.quantization or 'float32'}, re-scored depth "
                 f"{spec.rescore or 'none'}.",
                 snakemake.output.recall, snakemake.output.table)


run_script(main, snakemake)
