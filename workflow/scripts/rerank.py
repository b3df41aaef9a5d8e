"""Re-score the top N of the input run with a bi-encoder, a CrossEncoder or an LLM; a failing scorer degrades the
run."""

import numpy as np
import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.io.files import write_parquet
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.rerank import (
    bi_encoder_scorer,
    cross_encoder_scorer,
    rerank_or_fallback,
)
from rankbench.retrieval.vector_checks import check_same_dimension


def main(snakemake):
    queries = pd.read_parquet(snakemake.input.queries)
    chunks = pd.read_parquet(snakemake.input.chunks)
    scorer = snakemake.params.scorer

    def make_scorer():
        if scorer["kind"] == "bi-encoder":
            query_vectors, chunk_vectors = (np.load(path) for path in (snakemake.input.query_embeddings,
                                                                       snakemake.input.chunk_embeddings))
            check_same_dimension(query_vectors, chunk_vectors.shape[1], snakemake.input.query_embeddings,
                                 snakemake.input.chunk_embeddings)
            return bi_encoder_scorer(queries["qid"], query_vectors, chunks["chunk_id"], chunk_vectors)
        texts = dict(zip(queries["qid"], queries["question"])), dict(zip(chunks["chunk_id"], passage_text(chunks)))
        if scorer["kind"] == "llm":
            from rankbench.llm.chat import chat_from_spec
            from rankbench.llm.scorer import llm_scorer

            return llm_scorer(chat_from_spec(scorer["chat"]), *texts)
        return cross_encoder_scorer(scorer["model"], *texts, revision=scorer.get("revision"))

    reranked = rerank_or_fallback(pd.read_parquet(snakemake.input.run), snakemake.params.depth, make_scorer)
    write_parquet(reranked, snakemake.output.run)


run_script(main, snakemake)
