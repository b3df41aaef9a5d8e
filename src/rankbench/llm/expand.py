"""Document expansion by the configured LLM (doc2query): the questions each document answers, written as an
expansion file to be frozen (`rankbench freeze`) and named by methods' `expansion` (io/expansions.py)."""

from __future__ import annotations

import logging

import pandas as pd

from rankbench.io.progress import tracked
from rankbench.llm.chat import Chat
from rankbench.llm.prompts import expansion_messages, parse_questions

# Characters of a document shown to the LLM: its opening, where most documents say what they are about.
PROMPT_CHARS = 4000


def expand_documents(chat: Chat, documents: pd.DataFrame, count: int, language: str) -> list[dict[str, object]]:
    """One {"doc_id", "questions"} line per document, in corpus order; a document whose reply holds no question is
    left out (logged) and stays unexpanded."""
    lines: list[dict[str, object]] = []
    asked = tracked(documents[["doc_id", "title", "text"]].itertuples(index=False), len(documents),
                    "LLM expansion", "documents")
    for doc_id, title, text in asked:
        reply = chat.text(expansion_messages(title or "", (text or "")[:PROMPT_CHARS], count, language), 60 * count)
        questions = parse_questions(reply, count)
        if questions:
            lines.append({"doc_id": doc_id, "questions": questions})
        else:
            logging.warning("no question parsed for document %s: it stays unexpanded", doc_id)
    return lines
