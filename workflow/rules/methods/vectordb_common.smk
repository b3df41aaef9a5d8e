# A vector database (LanceDB): its helpers and what it registers in common.smk; its rules are in vectordb.smk.
from rankbench.retrieval.vectordb import VectorIndex, database_folder


def vectordb_index(method):
    return VectorIndex.from_config(METHOD_SPECS[method].get("vector_index"))


def vectordb_index_name(method):
    """The collection a vectordb method searches when the workflow builds it: `<engine>-<index>` (None: it searches
    an existing collection)."""
    if method not in methods_indexed_by("vectordb_collection"):
        return None
    return f"{METHOD_SPECS[method]['engine']}-{vectordb_index(method).name}"


def vectordb_collection_path(method, name=None):
    """The manifest of the collection a vectordb method searches, or of the one named (the database is the folder
    beside it, <name>.lancedb)."""
    name = name or vectordb_index_name(method)
    return corpus_path(
        method, "vectordb", METHOD_SPECS[method]["encoder"], f"{name}.json"
    )


def vectordb_inputs(wildcards):
    """A vectordb method's inputs: the manifest of the collection the workflow builds (none for an existing one),
    the chunks, the question vectors and the questions."""
    method, spec = wildcards.method, METHOD_SPECS[wildcards.method]
    inputs = {
        "chunks": corpus_path(method, "chunks.parquet"),
        "queries": query_embeddings_path(
            wildcards.qset, spec["encoder"], spec.get("rewrite")
        ),
        "questions": f"{R}/{wildcards.qset}/questions.parquet",
    }
    if vectordb_index_name(method):
        inputs["collection"] = vectordb_collection_path(method)
    return inputs


def approximate_vectordb_methods():
    return [
        m
        for m in methods_indexed_by("vectordb_collection")
        if vectordb_index(m).kind != "flat"
    ]


# Collection name -> its engine and build parameters (plus the exact one of each engine, for ann-recall).
VECTORDB_BUILDS = {
    vectordb_index_name(m): {
        "engine": METHOD_SPECS[m]["engine"],
        **vectordb_index(m).build_params,
    }
    for m in methods_indexed_by("vectordb_collection")
}
VECTORDB_BUILDS.update(
    {
        f"{build['engine']}-flat": {"engine": build["engine"], "kind": "flat"}
        for build in list(VECTORDB_BUILDS.values())
    }
)


INDEX_NAMES["vectordb_collection"] = vectordb_index_name
# The database folder beside a built collection's manifest (an existing collection is served elsewhere).
SERVED_FILES.update(
    {
        m: [str(database_folder(vectordb_collection_path(m)))]
        for m in methods_indexed_by("vectordb_collection")
    }
)
ANN_RECALL_METHODS.extend(approximate_vectordb_methods())
