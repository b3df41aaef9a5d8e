"""Cut documents into chunks, by structure (sections) or by fixed-size windows; chunk ids are stable."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rankbench.corpus.sections import INTRO_SECTION, split_sections
from rankbench.errors import InputError

CHUNK_COLUMNS = ["chunk_id", "doc_id", "sections", "title", "text", "audience", "valid_from", "valid_to"]


@dataclass(frozen=True)
class ChunkerSpec:
    """How to chunk: `sections` (one chunk per section, long ones split) or `fixed` (windows over the text)."""

    kind: str = "sections"
    size: int | None = 1500
    overlap: int = 200

    def __post_init__(self) -> None:
        if self.kind not in ("sections", "fixed"):
            raise ValueError(f"unknown chunker kind {self.kind!r}; use 'sections' or 'fixed'")
        if self.kind == "fixed" and not self.size:
            raise ValueError("a fixed chunker needs a size")
        if self.size is not None and not 0 <= self.overlap < self.size:
            raise ValueError(f"overlap {self.overlap} must be >= 0 and smaller than size {self.size}")


_SNAP = 40  # characters an edge may move back to land on a space


def word_windows(text: str, size: int | None, overlap: int) -> list[tuple[int, int]]:
    """(start, end) windows of at most `size` characters covering the text, consecutive ones sharing about
    `overlap` characters; edges move back to a space within 40 characters so no word is cut when avoidable.
    Starts strictly increase (chunk ids stay unique) and each window starts before the previous one ends (no gap)."""
    if size is None or len(text) <= size:
        return [(0, len(text))]
    spans, start = [], 0
    while True:
        end = min(start + size, len(text))
        if end < len(text):
            space = text.rfind(" ", max(start + 1, end - _SNAP), end + 1)
            end = space if space > start else end
        spans.append((start, end))
        if end >= len(text):
            return spans
        following = max(end - overlap, start + 1)
        space = text.rfind(" ", max(start + 1, following - _SNAP), following)
        start = space + 1 if space > start else following
        while start < len(text) and text[start].isspace():  # a window never starts on blank (its id is its offset)
            start += 1


def chunk_document(doc: pd.Series, spec: ChunkerSpec) -> list[dict[str, object]]:
    """Chunks of one document, each carrying the document metadata that filters need."""
    meta = {"doc_id": doc["doc_id"], "title": doc["title"], "audience": doc["audience"],
            "valid_from": doc["valid_from"], "valid_to": doc["valid_to"]}
    sections = split_sections(doc["text"])
    chunks = []
    if spec.kind == "sections":
        for section in sections:
            if not section.body:
                continue  # a heading without text is no evidence: no chunk
            body = f"{section.heading}\n{section.body}".strip()
            for part, (start, end) in enumerate(word_windows(body, spec.size, spec.overlap), start=1):
                suffix = "" if part == 1 else f"~{part}"
                chunks.append({**meta, "chunk_id": f"{doc['doc_id']}#{section.section_id}{suffix}",
                               "sections": [section.section_id], "text": body[start:end].strip()})
    else:
        text = doc["text"]
        for start, end in word_windows(text, spec.size, spec.overlap):
            covered = [s.section_id for s in sections if s.start < end and s.end > start]
            chunks.append({**meta, "chunk_id": f"{doc['doc_id']}@{start}", "sections": covered,
                           "text": text[start:end].strip()})
    chunks = [chunk for chunk in chunks if chunk["text"]]
    title = doc["title"].strip() if isinstance(doc["title"], str) else ""
    if not chunks and title:  # no body text (e.g. a record with a title and no abstract): its title is its evidence
        chunk_id = f"{doc['doc_id']}#{INTRO_SECTION}" if spec.kind == "sections" else f"{doc['doc_id']}@0"
        chunks = [{**meta, "chunk_id": chunk_id, "sections": [INTRO_SECTION], "text": title}]
    return chunks


def check_chunkable(documents: pd.DataFrame, spec: ChunkerSpec, path: Path | str, where: str) -> None:
    """At least one document yields a chunk: a title, text under a heading (sections) or any text (fixed); a corpus
    of untitled headings only would leave the indexes nothing to index."""
    titled = any(isinstance(title, str) and title.strip() for title in documents["title"])
    if spec.kind == "sections":
        found = titled or any(section.body for text in documents["text"] for section in split_sections(text))
    else:
        found = titled or any(text.strip() for text in documents["text"])
    if not found:
        raise InputError(path, where, "yields no chunk: no document has a title or text" +
                         (" under its headings (a heading alone is no evidence)" if spec.kind == "sections" else ""),
                         "Give the documents a title or a body text, or use a `fixed` chunker to index headings as "
                         "text.")


def chunk_corpus(documents: pd.DataFrame, spec: ChunkerSpec) -> pd.DataFrame:
    """All chunks of a corpus in document order."""
    rows = [chunk for _, doc in documents.iterrows() for chunk in chunk_document(doc, spec)]
    return pd.DataFrame(rows, columns=CHUNK_COLUMNS)


def passage_text(chunks: pd.DataFrame) -> list[str]:
    """What retrievers index: the document title, then the chunk text (once: a title-only document's chunk is its
    title)."""
    return [f"{title}\n{text}" if title and text != title.strip() else text
            for title, text in zip(chunks["title"], chunks["text"])]
