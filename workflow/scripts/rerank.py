"""Re-score the top N of the input run with a bi-encoder, a CrossEncoder or an LLM; a failing scorer degrades the
run."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the model worker its rule declares (in_worker), torch loaded

import numpy as np
import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.records.timing import Timing
from rankbench.retrieval.rerank import (
    bi_encoder_scorer,
    cross_encoder_scorer,
    rerank_or_fallback,
)
from rankbench.retrieval.scorer_kinds import scorer_kind
from rankbench.retrieval.vector_checks import check_same_dimension


def main(snakemake):
    timing = Timing()
    with timing.once("load"):
        queries = pd.read_parquet(snakemake.input.queries)
        chunks = pd.read_parquet(snakemake.input.chunks)
        run = pd.read_parquet(snakemake.input.run)
    scorer = snakemake.params.scorer
    chat = None

    def build_scorer():
        nonlocal chat
        if scorer_kind(scorer).encoder:
            query_vectors, chunk_vectors = (np.load(path) for path in (snakemake.input.query_embeddings,
                                                                       snakemake.input.chunk_embeddings))
            check_same_dimension(query_vectors, chunk_vectors.shape[1], snakemake.input.query_embeddings,
                                 snakemake.input.chunk_embeddings)
            return bi_encoder_scorer(queries["qid"], query_vectors, chunks["chunk_id"], chunk_vectors)
        texts = dict(zip(queries["qid"], queries["question"])), dict(zip(chunks["chunk_id"], passage_text(chunks)))
        if scorer_kind(scorer).chat:
            from rankbench.llm.chat import chat_from_spec
            from rankbench.llm.scorer import llm_scorer

            chat = chat_from_spec(scorer["chat"])
            return llm_scorer(chat, *texts)
        return cross_encoder_scorer(scorer["model"], *texts, revision=scorer.get("revision"))

    def make_scorer():
        """The scorer, loaded once, then scoring each question's pairs alone (timed per question)."""
        with timing.once("load"):
            score = build_scorer()

        def per_question(pairs: pd.DataFrame) -> np.ndarray:
            scores = np.empty(len(pairs), dtype=np.float64)
            groups = list(pairs.groupby("qid", sort=False).indices.items())
            for (_, rows), values in zip(groups, timing.each([qid for qid, _ in groups],
                                                             lambda i: score(pairs.iloc[groups[i][1]]))):
                scores[rows] = values
            return scores

        return per_question

    reranked = rerank_or_fallback(run, snakemake.params.depth, make_scorer)
    if chat is not None:
        timing.count(chat.sent, chat.tokens)
    write_parquet(reranked, snakemake.output.run)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
