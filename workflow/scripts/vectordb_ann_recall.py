"""What a vector database's ANN index costs: its recall@k against exact search of the same collection."""

import numpy as np

from rankbench.execution.scripting import run_script
from rankbench.retrieval.dense import write_recall
from rankbench.retrieval.vector_checks import check_same_dimension
from rankbench.retrieval.vectordb import VectorIndex, ann_recall, open_table, searched_collection, table_dimension


def main(snakemake):
    queries = np.load(snakemake.input.queries)
    spec = VectorIndex(**snakemake.params.vector_index)
    table = open_table(searched_collection(None, snakemake.input.collection), snakemake.input.collection)
    check_same_dimension(queries, table_dimension(table), snakemake.input.queries, snakemake.input.collection)
    write_recall(ann_recall(table, queries, snakemake.params.ks, spec),
                 f"Recall of {snakemake.wildcards.method} (lancedb {spec.name}) against exact search of its collection",
                 f"Question-set version {snakemake.wildcards.qset}; search parameters: nprobes {spec.nprobes} (IVF), "
                 f"ef {spec.ef} (HNSW), refine_factor {spec.refine_factor} (0: off).",
                 snakemake.output.recall, snakemake.output.table)


run_script(main, snakemake)
