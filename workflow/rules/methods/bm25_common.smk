# BM25 (bm25s): its helpers and what it registers in common.smk; its rules are in bm25.smk.
from rankbench.retrieval.bm25 import DEFAULT_BACKEND, index_keys


def bm25_index_name(method):
    """BM25 methods with the same analyzer and parameters share one index."""
    return shared_index_name(
        method, "bm25_index", lambda m: index_keys(METHOD_SPECS[m])
    )


def bm25_backends(index_name):
    """Search backends (sorted) of the BM25 methods that read this index."""
    return sorted(
        {
            METHOD_SPECS[m].get("backend", DEFAULT_BACKEND)
            for m in methods_indexed_by("bm25_index")
            if bm25_index_name(m) == index_name
        }
    )


INDEX_NAMES["bm25_index"] = bm25_index_name
SERVED_FILES.update(
    {
        m: [index_corpus_path(m, "bm25", f"{bm25_index_name(m)}.npz")]
        for m in methods_indexed_by("bm25_index")
    }
)
