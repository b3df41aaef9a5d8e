# BM25 (bm25s): its helpers and what it registers in common.smk; its rules are in bm25.smk.
from rankbench.retrieval.bm25 import DEFAULT_BACKEND, index_keys
from rankbench.retrieval.registry import method_setting


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


def bm25_serve_setup(method, qset):
    """What the serving probe reads to answer a BM25 method's questions (retrieval/serving.py, serve_bm25)."""
    spec = METHOD_SPECS[method]
    return {
        "inputs": {
            "index": index_corpus_path(
                method, "bm25", f"{bm25_index_name(method)}.npz"
            ),
            "chunks": corpus_path(method, "chunks.parquet"),
            "queries": queries_path(method, qset),
        },
        "params": {
            "filters": sorted(method_setting(spec, "filters")),
            "prf": spec.get("prf"),
            "backend": spec.get("backend", DEFAULT_BACKEND),
        },
    }


SERVE_SETUPS["retrieve_bm25"] = bm25_serve_setup
