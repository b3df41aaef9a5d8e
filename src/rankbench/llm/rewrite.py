"""LLM query rewriting, frozen as a rewrites file: one {"qid", "query"} line per question."""

from __future__ import annotations

import pandas as pd

from rankbench.io.progress import tracked
from rankbench.llm.chat import Chat
from rankbench.llm.prompts import parse_rewrite, rewrite_messages


def rewrite_questions(chat: Chat, questions: pd.DataFrame, language: str) -> list[dict[str, str]]:
    """A rewritten query per question, in question order; an empty reply keeps the question as it was."""
    asked = tracked(zip(questions["qid"], questions["question"]), len(questions), "LLM rewrites", "questions")
    return [{"qid": qid, "query": parse_rewrite(chat.text(rewrite_messages(question, language), 64)) or question}
            for qid, question in asked]
