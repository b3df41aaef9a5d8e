"""Rank chunks for every question in a vector database: the collection the workflow built (exact or through the
engine's ANN index) or an existing one, only read (ids the corpus does not hold are counted in the log); the run file
records the engine's version and what was searched (an existing table's version, a built index's parameters)."""

import logging

import numpy as np
import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.ranked_lists import report_unknown_documents
from rankbench.records.timing import Timing
from rankbench.retrieval.vector_checks import check_same_dimension
from rankbench.retrieval.vectordb import (
    VectorIndex,
    open_table,
    run_from_ids,
    search_provenance,
    search_table,
    searched_collection,
    table_dimension,
)


def main(snakemake):
    method, existing = snakemake.wildcards.method, snakemake.params.collection
    collection = searched_collection(existing, snakemake.input.get("collection"))
    source = f"collection {collection.name!r} of {collection.uri} (methods.{method})"
    timing = Timing()
    with timing.once("load"):
        questions = pd.read_parquet(snakemake.input.questions)
        chunks = pd.read_parquet(snakemake.input.chunks)
        queries = np.load(snakemake.input.queries)
        table = open_table(collection, source)
        check_same_dimension(queries, table_dimension(table, collection.vector_field), snakemake.input.queries,
                             source, f"methods.{method}.collection" if existing else None)
    logging.info("searching %s, table version %d, %d rows", source, table.version, table.count_rows())
    index, depth = VectorIndex(**snakemake.params.vector_index), snakemake.params.depth
    found = timing.each(questions["qid"].tolist(), lambda i: search_table(table, queries[i:i + 1], depth, index,
                                                                          collection=collection))
    width = min(depth, table.count_rows())
    ids = np.vstack([i for i, _ in found]) if found else np.empty((0, width), dtype=object)
    scores = np.vstack([s for _, s in found]) if found else np.empty((0, width), dtype=np.float32)
    run = run_from_ids(questions["qid"], ids, scores, chunks, depth)
    if existing:
        report_unknown_documents(run, chunks["doc_id"], source, method)
    provenance = search_provenance(table, collection, bool(existing), index)
    write_parquet(run, snakemake.output.run, metadata={"provenance": provenance})
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
