"""Split document text into sections marked by Markdown headings; section ids are stable slugs."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

INTRO_SECTION = "_intro"
# A line and its end, where Markdown (and markdown-it) ends lines: \r\n, \r or \n. Not str.splitlines(), which also
# breaks at U+2028, U+2029, U+001C-U+001E, U+0085, \v and \f: text inside a line, never the start of a heading.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def text_lines(text: str) -> list[str]:
    """The lines of a text with their ends (as str.splitlines(keepends=True), but ending at \r\n, \r, \n only)."""
    return _LINE.findall(text)


@dataclass(frozen=True)
class Section:
    """One section of a document: its slug id, heading text and body, with its character span [start, end) and
    where its body starts (the body is text[body_start:...] exactly, whatever the line ends)."""

    section_id: str
    heading: str
    body: str
    start: int
    end: int
    body_start: int


def slugify(heading: str) -> str:
    """ASCII slug of a heading: accents dropped, lower case, runs of other characters become '-'."""
    ascii_text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def heading_text(line: str) -> str | None:
    """The text of a Markdown heading line (`## Title ##`: 1-6 hashes, whitespace, text, optional closing hashes),
    else None. Plain string operations, linear in the line: a backtracking regex took seconds on `#` followed by
    thousands of spaces. Same result as the former regex `^#{1,6}\\s+(.+?)\\s*#*\\s*$`, so section ids never change."""
    hashes = len(line) - len(line.lstrip("#"))
    rest = line[hashes:]
    text = rest.lstrip()
    if not 1 <= hashes <= 6 or len(text) == len(rest):
        return None
    if not text:  # hashes and blanks only: the regex took the last blank as the text (when there were two)
        return rest[-1] if len(rest) >= 2 else None
    return text.rstrip().rstrip("#").rstrip() or text[0]


def split_sections(text: str) -> list[Section]:
    """Sections of a text in order; text before the first heading is the section '_intro'.

    A repeated heading gets a numeric suffix (`-2`, `-3`) so every section id is unique. A body is a slice of the
    text (blanks at its edges left out), so every offset in it is an offset of the text whatever ends its lines
    (\n, \r\n, \r or a mix).
    """
    sections: list[Section] = []
    seen: dict[str, int] = {}
    heading, section_id, start, body_from = "", INTRO_SECTION, 0, 0
    offset = 0

    def close(end: int) -> None:
        raw = text[body_from:end]
        body = raw.strip()
        if body or section_id != INTRO_SECTION:
            sections.append(Section(section_id, heading, body, start, end,
                                    body_from + len(raw) - len(raw.lstrip())))

    for line in text_lines(text):
        found = heading_text(line.rstrip("\r\n"))
        if found is not None:
            close(offset)
            heading = found
            base = slugify(heading) or "section"
            seen[base] = seen.get(base, 0) + 1
            section_id = base if seen[base] == 1 else f"{base}-{seen[base]}"
            start, body_from = offset, offset + len(line)
        offset += len(line)
    close(offset)
    return sections
