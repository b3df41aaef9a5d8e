"""Evidence spans of labels: a verbatim quote from the labelled document, or character offsets [start, end) into
its text, resolved to offsets and checked before anything runs (a span that cannot be found is an error, never a
silent zero)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from rankbench.corpus.sections import Section, split_sections
from rankbench.errors import InputError

_FIX = "Fix the label's evidence (in place in a draft; in a new question-set version once frozen)."


def _occurrences(text: str, quote: str) -> list[int]:
    """Start offsets of every occurrence of quote in text, overlapping ones included."""
    found, start = [], text.find(quote)
    while start >= 0:
        found.append(start)
        start = text.find(quote, start + 1)
    return found


def quote_of(text: str, start: int, end: int) -> tuple[str, int | None]:
    """The evidence a span [start, end) of a text is written as: its quote, and which occurrence of it the span is
    (None when the quote occurs once); evidence_span maps the pair back to [start, end)."""
    quote = text[start:end]
    starts = _occurrences(text, quote)
    return quote, (starts.index(start) + 1 if len(starts) > 1 else None)


def evidence_span(text: str, sections: Sequence[Section], evidence: str | tuple[int, int], occurrence: int | None,
                  section: str | None, path: Path | str, where: str) -> tuple[int, int]:
    """[start, end) of a label's evidence in its document's text: a quote found verbatim (the `occurrence`-th when it
    occurs several times) or offsets inside the text; the span lies within one section (the label's, when it names
    one). Every other case is an InputError naming `where`."""
    if isinstance(evidence, str):
        if not evidence.strip():
            raise InputError(path, where, "has an empty evidence quote", "Quote the passage that answers the "
                             "question, verbatim, or leave `evidence` out.")
        starts = _occurrences(text, evidence)
        if not starts:
            raise InputError(path, where, f"quotes evidence {_short(evidence)!r}, which does not occur in the "
                             "document's text", "Copy the quote verbatim from the document (same spaces, case and "
                             "punctuation). " + _FIX)
        if occurrence is None and len(starts) > 1:
            raise InputError(path, where, f"quotes evidence {_short(evidence)!r}, which occurs {len(starts)} times "
                             f"in the document (at characters {', '.join(map(str, starts[:5]))})",
                             "Say which one with `occurrence` (1 for the first), or quote a longer passage.")
        if occurrence is not None and not 1 <= occurrence <= len(starts):
            raise InputError(path, where, f"asks for occurrence {occurrence} of evidence {_short(evidence)!r}, "
                             f"which occurs {len(starts)} time(s)", f"Give an occurrence from 1 to {len(starts)}.")
        start = starts[(occurrence or 1) - 1]
        end = start + len(evidence)
    else:
        start, end = evidence
        if occurrence is not None:
            raise InputError(path, where, "gives an occurrence with evidence offsets", "`occurrence` picks one of "
                             "several places a quote occurs; offsets need none: remove it.")
        if not 0 <= start < end <= len(text):
            raise InputError(path, where, f"gives evidence offsets [{start}, {end}), which are "
                             + ("reversed or empty" if start >= end else f"outside the text (0 to {len(text)})"),
                             "Offsets are [start, end) character positions in the document's text, start < end. "
                             + _FIX)
    holder = [s for s in sections if s.start <= start and end <= s.end]
    if not holder:
        raise InputError(path, where, f"has evidence (characters {start} to {end}) spanning more than one section",
                         "Give one label per section, each with the evidence in that section.")
    if section is not None and holder[0].section_id != section:
        raise InputError(path, where, f"labels section {section!r} but its evidence (characters {start} to {end}) "
                         f"lies in section {holder[0].section_id!r}", _FIX)
    return start, end


def _short(quote: str) -> str:
    return quote if len(quote) <= 60 else quote[:57] + "..."


def resolve_evidence(labels: pd.DataFrame, documents: pd.DataFrame, path: Path | str,
                     where: Callable[[str], str]) -> pd.DataFrame:
    """Labels with `evidence_start`/`evidence_end` resolved for every label carrying evidence (other labels keep
    nulls); labels without evidence columns (BEIR, TREC, ir_datasets versions) are returned as they are.
    `where(qid)` names a question in messages (its line); the label's number within the question is added."""
    if "evidence" not in labels.columns:
        return labels
    given = labels["evidence"].notna() | labels["evidence_start"].notna()
    if not given.any():
        return labels
    labels = labels.copy()
    number = labels.groupby("qid", sort=False).cumcount() + 1
    texts = dict(zip(documents["doc_id"], documents["text"]))
    sections = {doc_id: split_sections(texts[doc_id]) for doc_id in set(labels.loc[given, "doc_id"])}
    starts, ends = labels["evidence_start"].astype(object).tolist(), labels["evidence_end"].astype(object).tolist()
    for i in [int(i) for i in labels.index.get_indexer(labels.index[given])]:
        row = labels.iloc[i]
        quote = row["evidence"]
        evidence = quote if isinstance(quote, str) else (int(row["evidence_start"]), int(row["evidence_end"]))
        occurrence = None if pd.isna(row["occurrence"]) else int(row["occurrence"])
        section = row["section"] if isinstance(row["section"], str) else None
        starts[i], ends[i] = evidence_span(texts[row["doc_id"]], sections[row["doc_id"]], evidence, occurrence,
                                           section, path, f"{where(row['qid'])}, label {number.iloc[i]}")
    labels["evidence_start"] = pd.array(starts, dtype="Int64")
    labels["evidence_end"] = pd.array(ends, dtype="Int64")
    return labels
