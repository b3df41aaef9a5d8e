# A search endpoint (`type: http`): its helpers; its rule is in http.smk.
from rankbench.retrieval.registry import method_setting

# Answers of search endpoints (`type: http`), by endpoint and request: a rerun sends nothing.
HTTP_SEARCH_CACHE = f"{R}/cache/http-search"


def search_http_inputs(wildcards):
    """A search endpoint's questions and the corpus; the chunks too when its answers name chunks."""
    inputs = {
        "questions": f"{R}/{wildcards.qset}/questions.parquet",
        "documents": f"{R}/corpus/documents.parquet",
    }
    if method_setting(METHOD_SPECS[wildcards.method], "returns") == "chunk":
        inputs["chunks"] = corpus_path(wildcards.method, "chunks.parquet")
    return inputs


def http_serve_setup(method, qset):
    """What the serving probe sends a search endpoint (retrieval/serving.py, serve_http): the run's request."""
    inputs = {}
    if method_setting(METHOD_SPECS[method], "returns") == "chunk":
        inputs["chunks"] = corpus_path(method, "chunks.parquet")
    return {"inputs": inputs, "params": {"spec": method_spec(method)}}


SERVE_SETUPS["search_http"] = http_serve_setup
