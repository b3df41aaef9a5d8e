"""Re-score the top N of the input run with a bi-encoder, a CrossEncoder or an LLM."""

import numpy as np
import pandas as pd

from rankbench.chunking import passage_text
from rankbench.files import write_parquet
from rankbench.llm.chat import chat_from_spec
from rankbench.llm.rerank import llm_scorer
from rankbench.rerank import bi_encoder_scorer, cross_encoder_scorer, rerank
from rankbench.scripting import run_script


def main(snakemake):
    questions = pd.read_parquet(snakemake.input.questions)
    chunks = pd.read_parquet(snakemake.input.chunks)
    scorer = snakemake.params.scorer
    if scorer["kind"] == "bi-encoder":
        score_pairs = bi_encoder_scorer(questions["qid"], np.load(snakemake.input.query_embeddings),
                                        chunks["chunk_id"], np.load(snakemake.input.chunk_embeddings))
    elif scorer["kind"] == "llm":
        score_pairs = llm_scorer(chat_from_spec(scorer["chat"]), dict(zip(questions["qid"], questions["question"])),
                                 dict(zip(chunks["chunk_id"], passage_text(chunks))))
    else:
        score_pairs = cross_encoder_scorer(scorer["model"], dict(zip(questions["qid"], questions["question"])),
                                           dict(zip(chunks["chunk_id"], passage_text(chunks))))
    reranked = rerank(pd.read_parquet(snakemake.input.run), snakemake.params.depth, score_pairs)
    write_parquet(reranked, snakemake.output.run)


run_script(main, snakemake)
