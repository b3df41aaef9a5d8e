"""LLM reranking: a PairScorer (like rankbench.retrieval.rerank's) giving P(yes) from logprobs, or the 0–3 grade."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.io.progress import tracked
from rankbench.llm.chat import Chat, first_token_probabilities
from rankbench.llm.prompts import judge_messages, parse_grade, relevance_messages
from rankbench.retrieval.rerank import PairScorer

YES = ("yes", "oui")
NO = ("no", "non")


def llm_scorer(chat: Chat, questions: dict[str, str], passages: dict[str, str]) -> PairScorer:
    """Score (qid, chunk_id) pairs by P(yes | question, passage) normalized over yes+no; a backend that returns
    no logprobs gets the judge's 0–3 grade instead (unparsable replies score 0)."""

    def score_pair(question: str, passage: str) -> float:
        response = chat.request(relevance_messages(question, passage), max_tokens=1, logprobs=10)
        probabilities = first_token_probabilities(response)
        if probabilities is None:
            return float(parse_grade(chat.text(judge_messages(question, passage), 3)) or 0)
        yes = sum(probabilities.get(token, 0.0) for token in YES)
        no = sum(probabilities.get(token, 0.0) for token in NO)
        return yes / (yes + no) if yes + no > 0 else 0.0

    def score(pairs: pd.DataFrame) -> np.ndarray:
        asked = tracked(zip(pairs["qid"], pairs["chunk_id"]), len(pairs), "LLM rerank", "pairs")
        return np.array([score_pair(questions[q], passages[c]) for q, c in asked], dtype=np.float64)

    return score
