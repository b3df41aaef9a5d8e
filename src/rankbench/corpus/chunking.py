"""Cut documents into chunks, by structure (sections) or by fixed-size windows; chunk ids are stable."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.corpus.sections import INTRO_SECTION, Section, split_sections
from rankbench.corpus.tokens import load_tokenizer
from rankbench.errors import InputError

# start/end: the chunk's character span [start, end) in its document's text (what evidence metrics intersect).
CHUNK_COLUMNS = ["chunk_id", "doc_id", "sections", "title", "text", "audience", "valid_from", "valid_to", "start",
                 "end"]


CHUNKER_KINDS = ("sections", "fixed", "tokens", "sentences", "recursive")
# What a chunker's size and overlap count, by kind.
SIZE_UNITS = {"sections": "characters", "fixed": "characters", "tokens": "tokens", "sentences": "sentences",
              "recursive": "characters"}
# The most of a window a config's chunker may share with the next (ChunkerSpec.check_overlap).
MAX_OVERLAP_SHARE = 0.5
# Default size and overlap by unit (an overlap of 200 characters would be 200 sentences, refused under any size
# below it); a given size smaller than four times the overlap default takes a quarter of it as its overlap.
UNIT_DEFAULTS = {"characters": {"size": 1500, "overlap": 200}, "tokens": {"size": 256, "overlap": 32},
                 "sentences": {"size": 5, "overlap": 1}}


@dataclass(frozen=True)
class ChunkerSpec:
    """How to chunk: `sections` (one chunk per section, long ones split), `fixed` (windows of `size` characters),
    `tokens` (windows of `size` tokens of `tokenizer`), `sentences` (`size` sentences, the next window starting
    `size - overlap` sentences on) or `recursive` (a section while it fits in `size` characters, else its paragraphs,
    else their sentences, packed up to `size`). Consecutive windows share `overlap` units (SIZE_UNITS)."""

    kind: str = "sections"
    size: int | None = 1500
    overlap: int = 200
    tokenizer: str | None = None

    @classmethod
    def from_config(cls, spec: Mapping[str, Any]) -> ChunkerSpec:
        """A chunker as the config gives it, its kind's unit's defaults (chunker_settings) filled in."""
        return cls(**chunker_settings(spec))

    def __post_init__(self) -> None:
        if self.kind not in CHUNKER_KINDS:
            raise ValueError(f"unknown chunker kind {self.kind!r}; use one of {', '.join(CHUNKER_KINDS)}")
        if self.kind != "sections" and not self.size:
            raise ValueError(f"a {self.kind} chunker needs a size (in {SIZE_UNITS[self.kind]})")
        if self.tokenizer is not None and self.kind != "tokens":
            raise ValueError("only a tokens chunker takes a tokenizer")
        if self.size is not None and not 0 <= self.overlap < self.size:
            raise ValueError(f"overlap {self.overlap} must be >= 0 and smaller than size {self.size}")

    def check_overlap(self) -> None:
        """A config's chunker shares at most half a window (MAX_OVERLAP_SHARE): closer to the size, the chunk count
        explodes (size 1,000 and overlap 990 made 874,589 chunks of a 5 MB line, every character in 100 of them)."""
        if self.size is not None and self.kind != "recursive" and self.overlap > self.size * MAX_OVERLAP_SHARE:
            raise ValueError(f"overlap {self.overlap} is more than half of size {self.size}: each part of the text "
                             f"would be in about {self.size // max(self.size - self.overlap, 1)} chunks")


def chunker_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A chunker's config with the size and overlap its kind's unit defaults to (UNIT_DEFAULTS; the overlap at most
    a quarter of the size) where it gives none: what the chunk job runs and the effective config records."""
    defaults = UNIT_DEFAULTS[SIZE_UNITS.get(spec.get("kind", "sections"), "characters")]
    size = spec.get("size", defaults["size"])
    overlap = defaults["overlap"] if not isinstance(size, int) else min(defaults["overlap"], size // 4)
    return {"size": size, "overlap": overlap, **spec}


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


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) narrowed to exclude the blanks at its edges (the chunk's text is text[start:end].strip())."""
    part = text[start:end]
    return start + len(part) - len(part.lstrip()), end - len(part) + len(part.rstrip())


def _section_spans(text: str, section: Section, body: str, windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Document spans of a section chunk's windows over `body` (the heading, a newline, the section's body): a
    window's part in the heading maps to the heading line's start, its part in the body to the body's characters (the
    section's body is a slice of the text at body_start, whatever its line ends)."""
    prefix = len(body) - len(section.body)
    spans = []
    for start, end in windows:
        start, end = _stripped(body, start, end)
        spans.append((section.start if start < prefix else section.body_start + start - prefix,
                      section.body_start + max(end - prefix, 0)))
    return spans


def chunk_document(doc: pd.Series, spec: ChunkerSpec) -> list[dict[str, object]]:
    """Chunks of one document, each carrying the document metadata that filters need and its character span."""
    meta = {"doc_id": doc["doc_id"], "title": doc["title"], "audience": doc["audience"],
            "valid_from": doc["valid_from"], "valid_to": doc["valid_to"]}
    sections = split_sections(doc["text"])
    chunks = []
    if spec.kind == "sections":
        for section in sections:
            if not section.body:
                continue  # a heading without text is no evidence: no chunk
            body = f"{section.heading}\n{section.body}".strip()
            windows = word_windows(body, spec.size, spec.overlap)
            spans = _section_spans(doc["text"], section, body, windows)
            for part, ((start, end), span) in enumerate(zip(windows, spans, strict=True), start=1):
                suffix = "" if part == 1 else f"~{part}"
                chunks.append({**meta, "chunk_id": f"{doc['doc_id']}#{section.section_id}{suffix}",
                               "sections": [section.section_id], "text": body[start:end].strip(),
                               "start": span[0], "end": span[1]})
    else:
        text = doc["text"]
        for start, end in _spans(text, sections, spec):
            covered = [s.section_id for s in sections if s.start < end and s.end > start]
            chunks.append({**meta, "chunk_id": f"{doc['doc_id']}@{start}", "sections": covered,
                           "text": text[start:end].strip(), **dict(zip(("start", "end"), _stripped(text, start, end)))})
    chunks = [chunk for chunk in chunks if chunk["text"]]
    title = doc["title"].strip() if isinstance(doc["title"], str) else ""
    if not chunks and title:  # no body text (e.g. a record with a title and no abstract): its title is its evidence
        chunk_id = f"{doc['doc_id']}#{INTRO_SECTION}" if spec.kind == "sections" else f"{doc['doc_id']}@0"
        chunks = [{**meta, "chunk_id": chunk_id, "sections": [INTRO_SECTION], "text": title, "start": 0, "end": 0}]
    return chunks


def _spans(text: str, sections: list[Section], spec: ChunkerSpec) -> list[tuple[int, int]]:
    """[start, end) windows over a document's text for the chunkers that cut the text itself (not `sections`)."""
    size = int(spec.size or 0)
    if spec.kind == "fixed":
        return word_windows(text, size, spec.overlap)
    if spec.kind == "tokens":
        return unit_windows(bounded_units(load_tokenizer(spec.tokenizer).spans(text)), size, spec.overlap)
    if spec.kind == "sentences":
        return unit_windows(sentence_spans(text, 0, len(text)), size, spec.overlap)
    return recursive_spans(text, sections, size)


def unit_windows(units: list[tuple[int, int]], size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of `size` consecutive units (tokens, sentences), each starting `size - overlap` units after the
    previous one (the last window ends with the last unit), as character spans from a first unit's start to a last
    unit's end."""
    step, windows = size - overlap, []
    for first in range(0, len(units), step):
        windows.append((units[first][0], units[min(first + size, len(units)) - 1][1]))
        if first + size >= len(units):
            break
    return windows


# The longest a token unit may be: a word the tokenizer reads as one token (the regex fallback's `\w+`, a WordPiece
# [UNK] of a 5 MB line without a space) is cut into pieces of this many characters, so a `tokens` chunk stays bounded.
MAX_TOKEN_CHARS = 100


def bounded_units(units: list[tuple[int, int]], longest: int = MAX_TOKEN_CHARS) -> list[tuple[int, int]]:
    """The (non-empty) units, each one longer than `longest` characters cut into consecutive pieces of that many."""
    return [(start, min(start + longest, b)) for a, b in units for start in range(a, b, longest)]


# A line ends at \r\n, \r or \n (as sections.text_lines reads lines), or at a Unicode line or paragraph separator
# (U+0085, U+2028, U+2029), which the sentence and paragraph splits honour too.
_LINE_END = r"(?:\r\n|\r(?!\n)|[\n\x85\u2028\u2029])"
_SENTENCE_END = re.compile(rf"(?<=[.!?…])\s+|{_LINE_END}\s*")
_PARAGRAPH_END = re.compile(rf"{_LINE_END}[ \t\f\v]*{_LINE_END}\s*|\u2029\s*")


def _pieces(text: str, start: int, end: int, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    """Non-blank spans of text[start:end] between matches of `boundary`, blanks at their edges left out."""
    spans, position = [], start
    for match in boundary.finditer(text, start, end):
        spans.append(_stripped(text, position, match.start()))
        position = match.end()
    spans.append(_stripped(text, position, end))
    return [(a, b) for a, b in spans if b > a]


# The longest a sentence unit may be: a text with no sentence end (a 5 MB line) is cut into word windows of this many
# characters, so a `sentences` chunk stays bounded whatever the text.
MAX_SENTENCE_CHARS = 2000


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentences of text[start:end]: ended by `.`, `!`, `?` or `…` before a blank, or by a line break (a heading
    or a list item is a sentence of its own); a longer one than MAX_SENTENCE_CHARS is cut into word windows."""
    spans = []
    for a, b in _pieces(text, start, end, _SENTENCE_END):
        if b - a <= MAX_SENTENCE_CHARS:
            spans.append((a, b))
        else:
            spans += [_stripped(text, a + x, a + y) for x, y in word_windows(text[a:b], MAX_SENTENCE_CHARS, 0)]
    return spans


def recursive_spans(text: str, sections: list[Section], size: int) -> list[tuple[int, int]]:
    """Headings, then paragraphs, then sentences: a section that fits in `size` characters is one chunk; else its
    paragraphs, else their sentences, are packed in order while they fit; a sentence longer than `size` is cut into
    word windows. Spans do not overlap."""
    def split(start: int, end: int, level: int) -> list[tuple[int, int]]:
        if end - start <= size:
            return [(start, end)]
        if level == 2:
            return [(start + a, start + b) for a, b in word_windows(text[start:end], size, 0)]
        parts = _pieces(text, start, end, _PARAGRAPH_END if level == 0 else _SENTENCE_END)
        if len(parts) <= 1 and level < 2:
            return split(start, end, level + 1)
        packed: list[tuple[int, int]] = []
        for a, b in parts:
            if packed and b - packed[-1][0] <= size:
                packed[-1] = (packed[-1][0], b)
            elif b - a <= size:
                packed.append((a, b))
            else:
                packed.extend(split(a, b, level + 1))
        return packed

    bounds = [_stripped(text, s.start, s.end) for s in sections] or [_stripped(text, 0, len(text))]
    return [span for a, b in bounds if b > a for span in split(a, b, 0)]


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
