"""Tests of rankbench.corpus.chunking: section and fixed-window chunkers, stable ids, passage text, spec validation."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankbench.corpus.chunking import (
    CHUNK_COLUMNS,
    ChunkerSpec,
    chunk_corpus,
    chunk_document,
    passage_text,
    word_windows,
)
from rankbench.corpus.sections import split_sections


def words(prefix: str, n: int) -> str:
    """n distinct 4-5 character tokens, so a chunk's tokens tell exactly which part of the text it holds."""
    return " ".join(f"{prefix}{i:03d}" for i in range(n))


def document(text: str, doc_id: str = "d1", title: str = "Title", **fields: object) -> pd.Series:
    return pd.Series({"doc_id": doc_id, "title": title, "text": text, "audience": "public", "valid_from": None,
                      "valid_to": None, **fields})


def corpus(*docs: pd.Series) -> pd.DataFrame:
    return pd.DataFrame(list(docs))


LONG = words("w", 120)  # 599 characters
DOC = document(f"Intro line.\n\n## Deadline\n{LONG}\n\n## Refund\nPaid to the card.\n\n## Empty\n\n"
               "## Été 2024\nSummer.")


# --------------------------------------------------------------------------- sections chunker


def test_sections_chunker_ids_and_metadata() -> None:
    spec = ChunkerSpec(kind="sections", size=None)
    chunks = chunk_corpus(corpus(DOC, document("## Only\nOne.", doc_id="d2", audience="staff",
                                               valid_from="2024-01-01")), spec)
    assert list(chunks.columns) == CHUNK_COLUMNS
    assert chunks["chunk_id"].tolist() == ["d1#_intro", "d1#deadline", "d1#refund", "d1#ete-2024", "d2#only"]
    assert chunks["sections"].tolist() == [["_intro"], ["deadline"], ["refund"], ["ete-2024"], ["only"]]
    refund = chunks.set_index("chunk_id").loc["d1#refund"]
    assert refund["text"] == "Refund\nPaid to the card." and refund["title"] == "Title"
    staff = chunks.set_index("chunk_id").loc["d2#only"]
    assert staff["audience"] == "staff" and staff["valid_from"] == "2024-01-01"


def test_empty_sections_are_dropped() -> None:
    chunks = chunk_document(document("## Parent\n### Child\nText.\n## Empty\n\n   \n## Last\nEnd."),
                            ChunkerSpec(size=None))
    assert [c["chunk_id"] for c in chunks] == ["d1#child", "d1#last"]
    assert all(c["text"] for c in chunks)
    assert chunk_document(document("", title=""), ChunkerSpec()) == []  # untitled and empty: nothing to index


def test_long_section_is_split_with_overlap() -> None:
    spec = ChunkerSpec(kind="sections", size=200, overlap=60)
    chunks = [c for c in chunk_document(DOC, spec) if c["sections"] == ["deadline"]]
    ids = [c["chunk_id"] for c in chunks]
    assert ids[0] == "d1#deadline" and ids[1:] == [f"d1#deadline~{i}" for i in range(2, len(ids) + 1)]
    assert len(ids) >= 4  # 609 characters in windows of 200 advancing by ~140
    assert all(len(c["text"]) <= spec.size for c in chunks)
    body_tokens = ("Deadline " + LONG).split()
    token_lists = [c["text"].split() for c in chunks]
    for tokens in token_lists:  # each part is a contiguous run of whole words
        first = body_tokens.index(tokens[0])
        assert body_tokens[first:first + len(tokens)] == tokens
    for before, after in zip(token_lists, token_lists[1:]):
        shared = set(before) & set(after)
        assert len(shared) >= 8, (before, after)  # 60 characters of overlap, minus word snapping
        assert before[-1] in after
    assert set().union(*map(set, token_lists)) == set(body_tokens)  # nothing lost


def test_short_sections_are_not_split() -> None:
    chunks = chunk_document(DOC, ChunkerSpec(size=1500, overlap=200))
    assert [c["chunk_id"] for c in chunks] == ["d1#_intro", "d1#deadline", "d1#refund", "d1#ete-2024"]


def test_repeated_headings_get_unique_ids() -> None:
    chunks = chunk_document(document("## Notes\nA.\n## Notes\nB."), ChunkerSpec(size=None))
    assert [c["chunk_id"] for c in chunks] == ["d1#notes", "d1#notes-2"]


# --------------------------------------------------------------------------- fixed chunker


def test_fixed_windows_cover_text_with_overlap_and_record_sections() -> None:
    text = DOC["text"]
    spec = ChunkerSpec(kind="fixed", size=150, overlap=40)
    chunks = chunk_document(DOC, spec)
    starts = [int(c["chunk_id"].split("@")[1]) for c in chunks]
    assert starts[0] == 0 and starts == sorted(set(starts))
    assert all(len(c["text"]) <= spec.size for c in chunks)
    covered = [False] * len(text)
    for chunk, start in zip(chunks, starts):
        # The id is the chunk's character offset: the text sits there in the document.
        offset = text.index(chunk["text"], start)
        assert offset - start <= 2
        for i in range(offset, offset + len(chunk["text"])):
            covered[i] = True
        expected = {s.section_id for s in split_sections(text)
                    if s.start < offset + len(chunk["text"]) and s.end > offset}
        assert expected <= set(chunk["sections"])
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())
    for (a, ca), (b, _) in zip(zip(starts, chunks), zip(starts[1:], chunks[1:])):
        assert a + len(ca["text"]) - b >= 10  # overlap survives word snapping
    assert chunks[0]["sections"][0] == "_intro" and chunks[-1]["sections"][-1] == "ete-2024"
    assert any(len(c["sections"]) >= 2 for c in chunks)


def test_fixed_short_document_is_one_chunk() -> None:
    chunks = chunk_document(document("## A\nshort"), ChunkerSpec(kind="fixed", size=100, overlap=10))
    assert [(c["chunk_id"], c["sections"], c["text"]) for c in chunks] == [("d1@0", ["a"], "## A\nshort")]


def test_ids_are_stable_across_calls() -> None:
    docs = corpus(DOC, document(words("x", 300), doc_id="d2"))
    for spec in (ChunkerSpec(), ChunkerSpec(size=120, overlap=30), ChunkerSpec(kind="fixed", size=100, overlap=20)):
        first, second = chunk_corpus(docs, spec), chunk_corpus(docs.copy(), spec)
        pd.testing.assert_frame_equal(first, second)
        assert first["chunk_id"].is_unique


def test_word_windows() -> None:
    assert word_windows("x" * 10, None, 0) == [(0, 10)]
    assert word_windows("x" * 10, 10, 3) == [(0, 10)]
    assert word_windows("x" * 25, 10, 3) == [(0, 10), (7, 17), (14, 24), (21, 25)]
    assert word_windows("", 10, 3) == [(0, 0)]
    # Edges land on spaces; no window exceeds the size even when its start moved back.
    text = "h\na a aa aaa aaaaaaaaaaaa a a a a a a a a a a a a a a aaaaaaaaaa"
    spans = word_windows(text, 50, 25)
    assert all(end - start <= 50 for start, end in spans)
    assert all(text[start - 1] == " " for start, _ in spans[1:])
    blank = "a a a a a a a a a a a a a a a a aaaaaaa aaaaaaaaaaa"  # a window would have started on a space
    assert all(not blank[start].isspace() for start, _ in word_windows(blank, 50, 43))
    # without overlap the next window starts where the last ended, on the space between two words: skipped
    assert word_windows("a" * 25 + " " + "a" * 25, 50, 0) == [(0, 25), (26, 51)]


_texts = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=60), min_size=1, max_size=60).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(text=_texts, size=st.integers(50, 300), overlap_fraction=st.floats(0, 0.99))
def test_fixed_chunker_invariants(text: str, size: int, overlap_fraction: float) -> None:
    """Any schema-valid spec (size >= 50, 0 <= overlap < size): unique ids, parts no longer than size,
    every character of the text in some chunk - even when the window step is shorter than a word."""
    overlap = min(int(size * overlap_fraction), size - 1)
    chunks = chunk_document(document(text), ChunkerSpec(kind="fixed", size=size, overlap=overlap))
    ids = [c["chunk_id"] for c in chunks]
    assert len(ids) == len(set(ids))
    assert all(0 < len(c["text"]) <= size for c in chunks)
    covered = [False] * len(text)
    for chunk in chunks:
        start = int(chunk["chunk_id"].split("@")[1])
        assert text[start:start + len(chunk["text"])] == chunk["text"]
        covered[start:start + len(chunk["text"])] = [True] * len(chunk["text"])
    assert all(covered[i] for i, ch in enumerate(text) if ch != " ")


@settings(max_examples=100, deadline=None)
@given(text=_texts, size=st.integers(50, 300), overlap_fraction=st.floats(0, 0.99))
def test_sections_chunker_invariants(text: str, size: int, overlap_fraction: float) -> None:
    overlap = min(int(size * overlap_fraction), size - 1)
    chunks = chunk_document(document("## H\n" + text), ChunkerSpec(kind="sections", size=size, overlap=overlap))
    assert [c["chunk_id"] for c in chunks] == ["d1#h"] + [f"d1#h~{i}" for i in range(2, len(chunks) + 1)]
    assert all(0 < len(c["text"]) <= size for c in chunks)
    assert set(" ".join(c["text"] for c in chunks).split()) >= set(text.split())


# --------------------------------------------------------------------------- passage text and spec


def test_passage_text_prepends_title() -> None:
    chunks = chunk_corpus(corpus(document("## A\nalpha", title="Guide"), document("beta", doc_id="d2", title="")),
                          ChunkerSpec())
    assert passage_text(chunks) == ["Guide\nA\nalpha", "beta"]


@pytest.mark.parametrize("kwargs,match", [
    ({"kind": "paragraphs"}, "unknown chunker kind 'paragraphs'"),
    ({"kind": "fixed", "size": None}, "fixed chunker needs a size"),
    ({"kind": "fixed", "size": 0}, "fixed chunker needs a size"),
    ({"size": 100, "overlap": 100}, "overlap 100 must be >= 0 and smaller than size 100"),
    ({"size": 100, "overlap": -1}, "overlap -1"),
])
def test_chunker_spec_validation(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ChunkerSpec(**kwargs)  # type: ignore[arg-type]


def test_chunker_spec_valid() -> None:
    assert ChunkerSpec(kind="sections", size=None, overlap=500).size is None
    assert ChunkerSpec(kind="fixed", size=50, overlap=49).overlap == 49


def test_a_corpus_of_untitled_headings_only_yields_no_chunk_and_is_refused_before_indexing() -> None:
    from rankbench.corpus.chunking import check_chunkable
    from rankbench.errors import InputError

    headings = corpus(document("## One\n\n### Two\n", doc_id="d1", title=""),
                      document("# Three", doc_id="d2", title=""))
    assert chunk_corpus(headings, ChunkerSpec()).empty
    with pytest.raises(InputError, match=r"corpus\.jsonl, chunker 'sections': yields no chunk.*under its headings"):
        check_chunkable(headings, ChunkerSpec(), "corpus.jsonl", "chunker 'sections'")
    fixed = ChunkerSpec(kind="fixed", size=100, overlap=0)  # a fixed chunker indexes headings as text
    check_chunkable(headings, fixed, "corpus.jsonl", "chunker 'fixed'")
    assert len(chunk_corpus(headings, fixed)) == 2
    blank = corpus(document("  \n", doc_id="d1", title=""))
    with pytest.raises(InputError, match="no document has a title or text"):
        check_chunkable(blank, fixed, "corpus.jsonl", "chunker 'fixed'")


@pytest.mark.parametrize("spec", [ChunkerSpec(), ChunkerSpec(kind="fixed", size=100, overlap=0)])
def test_a_document_with_a_title_and_no_body_is_one_chunk_of_its_title(spec: ChunkerSpec) -> None:
    """CACM: half the records have a title and no abstract; without a chunk they could never be retrieved."""
    from rankbench.corpus.chunking import check_chunkable, passage_text

    docs = corpus(document("", doc_id="d1", title="Algorithm 97: Shortest Path"),
                  document("## Only a heading", doc_id="d2", title="Heading doc"),
                  document("Body text.", doc_id="d3", title="Full"))
    chunks = chunk_corpus(docs, spec)
    by_doc = chunks.groupby("doc_id")["text"].agg(list).to_dict()
    assert by_doc["d1"] == ["Algorithm 97: Shortest Path"]
    # A heading alone is no evidence for the sections chunker (the title stands in); the fixed one indexes it as text.
    assert by_doc["d2"] == (["Heading doc"] if spec.kind == "sections" else ["## Only a heading"])
    assert by_doc["d3"] == ["Body text."]
    assert chunks["chunk_id"].is_unique
    passages = dict(zip(chunks["doc_id"], passage_text(chunks)))
    assert passages["d1"] == "Algorithm 97: Shortest Path" and passages["d3"] == "Full\nBody text."
    check_chunkable(docs.iloc[:2], spec, "corpus.jsonl", "chunker")
