# Dense retrieval over a FAISS index: its helpers and what it registers in method_tables.smk; its rules are in dense.smk.
from rankbench.retrieval.dense import IndexSpec, float_twins
from rankbench.retrieval.registry import method_setting


def dense_index(method):
    return IndexSpec.from_config(METHOD_SPECS[method].get("index"))


def dense_index_path(method, spec=None):
    spec = spec or dense_index(method)
    encoder = METHOD_SPECS[method]["encoder"]
    return index_corpus_path(method, "faiss", encoder, f"{spec.name}.faiss")


def dense_vectors(method):
    """The float chunk vectors a method re-scores its quantized index's candidates with (none without `rescore`)."""
    if not dense_index(method).rescore:
        return []
    return index_corpus_path(
        method, "embeddings", f"{METHOD_SPECS[method]['encoder']}.npy"
    )


def dense_index_stats(method, spec=None):
    """The size and build-time record of the FAISS index a method searches (see rule faiss_index)."""
    return dense_index_path(method, spec).removesuffix(".faiss") + ".json"


def approximate_methods():
    """Dense methods whose index is not the exact float one: approximate (HNSW, IVF) or compressed."""
    return [
        m
        for m in methods_indexed_by("faiss_index")
        if dense_index(m).kind != "flat" or dense_index(m).compressed
    ]


# Each dense method with a compressed index -> its float flat twin (None: none configured), for the vector-size page.
FLOAT_TWINS = float_twins(
    {
        m: {**METHOD_SPECS[m], "chunker": index_chunker(m)}
        for m in methods_indexed_by("faiss_index")
    }
)


def vector_size_methods():
    """The methods on the vector-size page: the compressed ones and their twins."""
    return sorted(set(FLOAT_TWINS) | {t for t in FLOAT_TWINS.values() if t})


FAISS_BUILDS = {
    dense_index(m).name: dense_index(m).build_params
    for m in methods_indexed_by("faiss_index")
}
FAISS_BUILDS["flat"] = IndexSpec().build_params


def dense_index_name(method):
    """The FAISS index a dense method searches, named after its build parameters (methods with the same share it)."""
    return dense_index(method).name


INDEX_NAMES["faiss_index"] = dense_index_name
INDEX_STATS.update({m: dense_index_stats(m) for m in methods_indexed_by("faiss_index")})
# The FAISS index, and the float vectors a re-scoring method reads beside it.
SERVED_FILES.update(
    {
        m: [dense_index_path(m), *([dense_vectors(m)] if dense_vectors(m) else [])]
        for m in methods_indexed_by("faiss_index")
    }
)
INDEX_BLOCKS.update(
    {
        m: METHOD_SPECS[m]["index"]
        for m in methods_indexed_by("faiss_index")
        if dense_index(m).min_vectors > 1
    }
)
ANN_RECALL_METHODS.extend(approximate_methods())
VERSION_PAGES.extend(["vector-size"] if FLOAT_TWINS else [])


def dense_serve_setup(method, qset):
    """What the serving probe reads to answer a dense method's questions (retrieval/serving.py, serve_dense)."""
    spec = METHOD_SPECS[method]
    vectors = dense_vectors(method)
    return {
        "inputs": {
            "index": dense_index_path(method),
            "chunks": corpus_path(method, "chunks.parquet"),
            "queries": queries_path(method, qset),
            **({"vectors": vectors} if vectors else {}),
        },
        "params": {
            "index": dict(sorted(vars(dense_index(method)).items())),
            "filters": sorted(method_setting(spec, "filters")),
            "encoder": encoder_spec(spec["encoder"]),
        },
    }


SERVE_SETUPS["retrieve_dense"] = dense_serve_setup
