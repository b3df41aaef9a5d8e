"""Markdown pipe tables and the natural order of ids (q2 before q10): the text output every page shares."""

from __future__ import annotations

import re

import pandas as pd

# A cell that is a number: bold, marks, a CI or (n=…) may surround it; "1. doc — title" or a date is text.
_NUMBER = re.compile(r"^(\*\*)?[-–+]?\d[\d.]*%?(\*\*)?[↑↓°]*( \[[^\]]*\]| \(n=\d+\))?[↑↓°]*$|^–$")


# What Markdown may read as markup anywhere in running text or a table cell (CommonMark lets a backslash escape any
# of them); `#`, `+`, `-` and `=` are markup only where a line starts, so `rrf-k-30` stays as written.
_MARKUP = re.compile(r"([\\`*_\[\]<>!|&~])")
_LINE_START = re.compile(r"^([#+=-])")


def markdown_literal(text: object) -> str:
    """User text (a note, a label, a kind, a question, a title) as Markdown that renders as that very text, on one
    line: an image, a link, raw HTML or an entity in it stays visible text, never markup a page would load."""
    return _LINE_START.sub(r"\\\1", _MARKUP.sub(r"\\\1", " ".join(str(text).split())))


def natural_key(value: object) -> tuple:
    """Sort key for an id: its digit runs compare as numbers (2 before 10, q2 before q10)."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", str(value))))


def natural_order(values: pd.Series) -> pd.Series:
    """natural_key of every value: a sort_values `key`."""
    return values.map(natural_key)


def markdown_grid(frame: pd.DataFrame) -> str:
    """A pipe table of text cells: columns of numbers right-aligned, the index and text columns left-aligned."""
    numeric = [all(_NUMBER.match(str(v)) for v in frame[c]) for c in frame.columns]
    lines = ["| " + " | ".join([frame.index.name or ""] + [str(c) for c in frame.columns]) + " |",
             "|---|" + "".join("---:|" if n else "---|" for n in numeric)]
    lines += [f"| {name} | " + " | ".join(str(v) for v in row) + " |" for name, row in frame.iterrows()]
    return "\n".join(lines)
