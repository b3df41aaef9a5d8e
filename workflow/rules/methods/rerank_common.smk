# Reranking another method's run: its helpers and what it registers in common.smk; its rule is in rerank.smk.
from rankbench.retrieval.registry import method_setting
from rankbench.retrieval.scorer_kinds import scorer_encoder, scorer_kind


def scorer_spec(method):
    """A rerank method's scorer settings, a hub cross-encoder's revision being the commit resolved at start."""
    scorer = METHOD_SPECS[method]["scorer"]
    return with_resolved_revision(scorer, MODEL_COMMITS.get(f"methods.{method}.scorer"))


def rerank_threads(wildcards):
    """CPU threads of a rerank job: a local LLM scorer's, else 1."""
    return chat_threads(METHOD_SPECS[wildcards.method]["scorer"].get("chat", {}))


def rerank_inputs(wildcards):
    method, qset = wildcards.method, wildcards.qset
    spec = METHOD_SPECS[method]
    inputs = {
        "run": run_path(spec["input"], qset),
        "queries": queries_path(method, qset),
        "chunks": corpus_path(method, "chunks.parquet"),
    }
    encoder = scorer_encoder(METHOD_SPECS[method]["scorer"])
    if encoder:
        inputs["query_embeddings"] = query_embeddings_path(
            qset, encoder, spec.get("rewrite")
        )
        inputs["chunk_embeddings"] = corpus_path(method, "embeddings", f"{encoder}.npy")
    return inputs


RERANKED_METHODS.extend(methods_of_rule("rerank"))
# A bi-encoder scorer reads the chunks' float vectors to score the candidates.
SERVED_FILES.update(
    {
        m: [
            corpus_path(
                m, "embeddings", f"{scorer_encoder(METHOD_SPECS[m]['scorer'])}.npy"
            )
        ]
        for m in methods_of_rule("rerank")
        if scorer_encoder(METHOD_SPECS[m]["scorer"])
    }
)


def rerank_serve_setup(method, qset):
    """What the serving probe reads to rerank a method's first stage (retrieval/serving.py, serve_rerank); None for
    an LLM scorer, whose calls are charged as its run recorded them (the probe sends no chat request).
    """
    spec = METHOD_SPECS[method]
    if scorer_kind(spec["scorer"]).chat:
        return None
    encoder = scorer_encoder(spec["scorer"])
    inputs = {
        "chunks": corpus_path(method, "chunks.parquet"),
        "queries": queries_path(method, qset),
    }
    if encoder:
        inputs["chunk_embeddings"] = corpus_path(method, "embeddings", f"{encoder}.npy")
    return {
        "inputs": inputs,
        "params": {
            "scorer": scorer_spec(method),
            "depth": method_setting(spec, "depth"),
            "encoders": {encoder: encoder_spec(encoder)} if encoder else {},
        },
    }


SERVE_SETUPS["rerank"] = rerank_serve_setup
