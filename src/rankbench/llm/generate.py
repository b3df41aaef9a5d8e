"""Question generation: seeded sections of the corpus, one natural-language and one keyword question each."""

from __future__ import annotations

import logging
import re
import unicodedata

import numpy as np
import pandas as pd

from rankbench.corpus.sections import split_sections
from rankbench.io.progress import Progress
from rankbench.llm.chat import Chat
from rankbench.llm.prompts import generation_messages, parse_generation

GENERATED_KIND = "generated"
MIN_SECTION_CHARS = 80


def duplicate_key(text: str) -> str:
    """Text for duplicate detection: accents dropped, lower case, punctuation and spacing collapsed."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return " ".join(re.findall(r"[a-z0-9]+", ascii_text.lower()))


def candidate_sections(documents: pd.DataFrame, min_chars: int = MIN_SECTION_CHARS) -> pd.DataFrame:
    """Every section with enough text to ask about: doc_id, section, title, body, audience, as_of."""
    rows = []
    for doc in documents.itertuples(index=False):
        as_of = doc.valid_from if isinstance(doc.valid_from, str) else None  # the document is in force then
        for section in split_sections(doc.text):
            if len(section.body) >= min_chars:
                rows.append({"doc_id": doc.doc_id, "section": section.section_id, "title": doc.title,
                             "body": f"{section.heading}\n{section.body}".strip(), "audience": doc.audience,
                             "as_of": as_of})
    return pd.DataFrame(rows, columns=["doc_id", "section", "title", "body", "audience", "as_of"])


def generate_questions(chat: Chat, documents: pd.DataFrame, count: int, seed: int, language: str,
                       qid_prefix: str = "g", min_chars: int = MIN_SECTION_CHARS) -> list[dict[str, object]]:
    """`count` deduplicated questions in native format, each labelled grade 3 with its source section.

    Sections are visited in a seeded random order; each gives a natural-language question and a keyword query
    (style `natural` / `keyword`); replies that do not parse and duplicates are skipped.
    """
    sections = candidate_sections(documents, min_chars)
    order = np.random.default_rng(seed).permutation(len(sections))
    records: list[dict[str, object]] = []
    seen: set[str] = set()
    with Progress(count, "LLM question generation", "questions") as progress:
        for position in order:
            if len(records) >= count:
                break
            section = sections.iloc[int(position)]
            reply = parse_generation(chat.text(generation_messages(section["title"], section["body"], language), 200))
            if not reply:
                logging.warning("no question parsed for %s#%s", section["doc_id"], section["section"])
            for style, field in (("natural", "question"), ("keyword", "keywords")):
                text = reply.get(field, "")
                key = duplicate_key(text)
                if not key or key in seen or len(records) >= count:
                    continue
                seen.add(key)
                records.append({
                    "qid": f"{qid_prefix}{len(records) + 1:03d}", "question": text, "kind": GENERATED_KIND,
                    "audience": section["audience"],
                    "as_of": section["as_of"] if isinstance(section["as_of"], str) else None,
                    "labels": [{"doc_id": section["doc_id"], "section": section["section"], "grade": 3}],
                    "style": style,
                })
                progress.update()
    return records
