"""What a vector database's ANN index costs: its recall@k against exact search of the same collection."""

import numpy as np

from rankbench.io.files import write_parquet, write_text
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.dense import recall_page
from rankbench.retrieval.vector_checks import check_same_dimension
from rankbench.retrieval.vectordb import VectorIndex, ann_recall, open_table, searched_collection, table_dimension


def main(snakemake):
    queries = np.load(snakemake.input.queries)
    spec = VectorIndex(**snakemake.params.vector_index)
    collection = searched_collection(None, snakemake.input.collection)
    table = open_table(collection, snakemake.input.collection)
    check_same_dimension(queries, table_dimension(table), snakemake.input.queries, snakemake.input.collection)
    recall = ann_recall(table, queries, snakemake.params.ks, spec)
    write_parquet(recall, snakemake.output.recall)
    note = (f"Question-set version {snakemake.wildcards.qset}; search parameters: nprobes {spec.nprobes} (IVF), ef "
            f"{spec.ef} (HNSW), refine_factor {spec.refine_factor} (0: off).")
    title = f"Recall of {snakemake.wildcards.method} (lancedb {spec.name}) against exact search of its collection"
    write_text(recall_page(title, note, recall), snakemake.output.table)


run_script(main, snakemake)
