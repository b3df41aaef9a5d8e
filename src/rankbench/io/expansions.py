"""Document expansion frozen in a file (doc2query-style: the questions each document is likely to answer, written
by hand or by an LLM): checked against the corpus, then appended to the text of the document's chunks."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.loaders import read_jsonl

LINE = 'Each line reads {"doc_id": "d1", "questions": ["a question the document answers", ...]}.'


def expansion_lock_key(name: str) -> str:
    """The lock key under which an expansion file is frozen (e.g. `expansions.doc2query`)."""
    return f"expansions.{name}"


def expansion_record(results: str | Path, name: str) -> Path:
    """Where the content hash the expanded chunks were first made from is recorded (see io.frozen.guard_results)."""
    return Path(results) / "corpus" / "expansions" / f".{name}.frozen-sha256"


def load_expansions(path: Path, doc_ids: Collection[str]) -> dict[str, list[str]]:
    """doc_id -> its questions, from a JSONL file of one line per expanded document (a document without a line is
    not expanded); an InputError naming the file and line for a malformed line, a document named twice or a
    document the corpus does not hold."""
    questions: dict[str, list[str]] = {}
    for number, record in read_jsonl(path):
        doc_id, texts = record.get("doc_id"), record.get("questions")
        if not isinstance(doc_id, str) or not doc_id:
            raise InputError(path, f"line {number}", "needs a non-empty string `doc_id`", LINE)
        if (not isinstance(texts, list) or not texts
                or not all(isinstance(text, str) and text.strip() for text in texts)):
            raise InputError(path, f"line {number}", f"needs `questions`, a non-empty list of non-empty strings, "
                             f"for document {doc_id!r}", LINE + " Drop the line to leave a document unexpanded.")
        if doc_id in questions:
            raise InputError(path, f"line {number}", f"expands document {doc_id!r} a second time",
                             "Keep one line per document, with all its questions.")
        if doc_id not in doc_ids:
            raise InputError(path, f"line {number}", f"names document {doc_id!r}, which the corpus does not hold",
                             "Expand documents of this corpus (check the doc_id against corpus.jsonl).")
        questions[doc_id] = [" ".join(text.split()) for text in texts]
    if not questions:
        raise InputError(path, None, "holds no expansion line", LINE)
    return questions


def expanded_chunks(chunks: pd.DataFrame, questions: Mapping[str, list[str]]) -> pd.DataFrame:
    """The chunks with each expanded document's questions appended to the text of every chunk of it (one line
    each, after a blank line); ids, order and every other column unchanged, so runs over them keep the chunk ids."""
    extra = chunks["doc_id"].map(lambda doc: "\n\n" + "\n".join(questions[doc]) if doc in questions else "")
    return chunks.assign(text=chunks["text"] + extra)
