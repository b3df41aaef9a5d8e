"""The prompts of every LLM step, and the parsing of their answers (kept together so a prompt change is one diff)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

GRADE_SCALE = (
    "3 = the passage answers the question directly; 2 = relevant but only a partial answer; "
    "1 = mentions the topic but does not answer; 0 = unrelated, or not in the question's language."
)
_GRADE = re.compile(r"[0-3]")


def judge_messages(question: str, passage: str) -> list[dict[str, str]]:
    """Ask for a 0–3 relevance grade as one digit."""
    return [
        {"role": "system", "content": "You grade search results. Reply with one digit only. " + GRADE_SCALE},
        {"role": "user", "content": f"Question: {question}\n\nPassage:\n{passage}\n\nGrade (0-3):"},
    ]


def parse_grade(text: str) -> int | None:
    """The first digit 0–3 of the reply, or None when there is none."""
    match = _GRADE.search(text)
    return int(match.group()) if match else None


def relevance_messages(question: str, passage: str) -> list[dict[str, str]]:
    """Ask a yes/no relevance question whose first token's probabilities give P(yes)."""
    return [
        {"role": "system", "content": "You judge search results. Answer with one word: yes or no."},
        {"role": "user", "content": f"Question: {question}\n\nPassage:\n{passage}\n\n"
                                    "Does the passage answer the question? Answer yes or no."},
    ]


def generation_messages(title: str, section: str, language: str) -> list[dict[str, str]]:
    """Ask for one natural-language question and one keyword query that the section answers."""
    return [
        {"role": "system", "content": f"You write test questions for a search engine. Write in {language}. "
                                      "Reply with a JSON object only."},
        {"role": "user", "content": (
            f"Document: {title}\n\nPassage:\n{section}\n\n"
            f"Write, in {language}, a question a customer would ask that this passage answers, and a short "
            "keyword query (2 to 5 words) for the same need. Do not copy sentences from the passage. "
            'Reply as {"question": "...", "keywords": "..."}')},
    ]


def parse_generation(text: str) -> dict[str, str]:
    """The `question` and `keywords` strings of the first JSON object in the reply (missing ones left out)."""
    for candidate in _brace_spans(text):
        try:
            parsed: Any = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            return {key: parsed[key].strip() for key in ("question", "keywords")
                    if isinstance(parsed.get(key), str) and parsed[key].strip()}
    return {}


def _brace_spans(text: str) -> Iterator[str]:
    """Each `{` … first `}` span, left to right without overlap, in one linear pass (a lazy regex rescans the rest
    of the reply from every `{` that no `}` follows)."""
    start = text.find("{")
    while start != -1:
        end = text.find("}", start)
        if end == -1:
            return
        yield text[start:end + 1]
        start = text.find("{", end + 1)


def rewrite_messages(question: str, language: str) -> list[dict[str, str]]:
    """Ask for the question rewritten as a search query, in its own language."""
    return [
        {"role": "system", "content": "You rewrite user questions into search queries for a knowledge base. "
                                      "Reply with the query only, on one line."},
        {"role": "user", "content": f"Rewrite this question as a precise search query in {language}, keeping "
                                    f"product names and codes exactly:\n{question}"},
    ]


def parse_rewrite(text: str) -> str:
    """The first non-empty line of the reply, without quotes or a leading label."""
    for line in text.splitlines():
        line = re.sub(r"^\s*(query|requête|requete)\s*:\s*", "", line.strip(), flags=re.IGNORECASE)
        line = line.strip().strip("\"'«»` ").strip()
        if line:
            return line
    return ""


def expansion_messages(title: str, text: str, count: int, language: str) -> list[dict[str, str]]:
    """Ask for the questions a document answers (doc2query), one a line, in the document's language."""
    return [
        {"role": "system", "content": "You write the questions a document answers, as users of a search engine "
                                      "would ask them. Reply with the questions only, one a line."},
        {"role": "user", "content": f"Write {count} different questions in {language} that this document answers, "
                                    f"keeping product names and codes exactly.\nTitle: {title}\n{text}"},
    ]


def parse_questions(text: str, count: int) -> list[str]:
    """The first `count` non-empty lines of the reply, without list numbers, bullets or quotes, duplicates dropped."""
    found: list[str] = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip().strip("\"'«»` ").strip()
        if line and line not in found:
            found.append(line)
    return found[:count]
