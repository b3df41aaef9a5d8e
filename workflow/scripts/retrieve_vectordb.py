"""Rank chunks for every question in a vector database: the collection the workflow built (exact or through the
engine's ANN index) or an existing one, only read (ids the corpus does not hold are counted in the log)."""

import logging

import numpy as np
import pandas as pd

from rankbench.io.files import write_parquet
from rankbench.io.runs import log_unknown_documents
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.vector_checks import check_same_dimension
from rankbench.retrieval.vectordb import (
    VectorIndex,
    open_table,
    run_from_ids,
    search_table,
    searched_collection,
    table_dimension,
)


def main(snakemake):
    method, existing = snakemake.wildcards.method, snakemake.params.collection
    collection = searched_collection(existing, snakemake.input.get("collection"))
    source = f"collection {collection.name!r} of {collection.uri} (methods.{method})"
    questions = pd.read_parquet(snakemake.input.questions)
    chunks = pd.read_parquet(snakemake.input.chunks)
    queries = np.load(snakemake.input.queries)
    table = open_table(collection, source)
    check_same_dimension(queries, table_dimension(table, collection.vector_field), snakemake.input.queries, source)
    logging.info("searching %s, table version %d, %d rows", source, table.version, table.count_rows())
    ids, scores = search_table(table, queries, snakemake.params.depth, VectorIndex(**snakemake.params.vector_index),
                               collection=collection)
    run = run_from_ids(questions["qid"], ids, scores, chunks, snakemake.params.depth)
    if existing:
        log_unknown_documents(run, chunks["doc_id"], source, method)
    write_parquet(run, snakemake.output.run)


run_script(main, snakemake)
