"""The tokens, sentences and recursive chunkers, chunk spans, chunker grids and the embedding cache across
chunkers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankbench.corpus.chunking import ChunkerSpec, chunk_document, sentence_spans
from rankbench.corpus.sections import split_sections
from rankbench.corpus.tokens import load_tokenizer
from rankbench.errors import InputError
from rankbench.pipeline.config import expand_chunkers
from rankbench.retrieval.encoders.cache import cache_key, embed_passages, load_caches, save_cache, text_hashes

_words = st.sampled_from(["vélo", "batterie", "charge", "3", "h.", "Oui!", "avion", "dépôt", "de", "500 €"])
_sentence = st.lists(_words, min_size=1, max_size=12).map(lambda w: " ".join(w) + ".")
_paragraph = st.lists(_sentence, min_size=1, max_size=5).map(" ".join)
_section = st.tuples(st.sampled_from(["## Charge", "## Voyager", "## Garantie"]),
                     st.lists(_paragraph, min_size=1, max_size=3).map("\n\n".join)).map("\n".join)
_texts = st.lists(_section, min_size=1, max_size=3).map("\n\n".join)


def document(text: str) -> pd.Series:
    return pd.Series({"doc_id": "d", "title": "T", "text": text, "audience": "public", "valid_from": None,
                      "valid_to": None})


@settings(max_examples=80, deadline=None)
@given(text=_texts, kind=st.sampled_from(["tokens", "sentences", "recursive", "fixed"]), size=st.integers(2, 120),
       overlap_share=st.floats(0, 0.9))
def test_every_chunk_is_its_span_of_the_text_and_no_character_is_lost(text, kind, size, overlap_share) -> None:
    size = size if kind in ("tokens", "sentences") else size * 5
    spec = ChunkerSpec(kind, size, int(overlap_share * size) if kind != "recursive" else 0)
    chunks = chunk_document(document(text), spec)
    assert len({c["chunk_id"] for c in chunks}) == len(chunks)
    assert all(text[c["start"]:c["end"]] == c["text"] for c in chunks)
    covered = np.zeros(len(text), dtype=bool)
    for c in chunks:
        covered[c["start"]:c["end"]] = True
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))  # every non-blank character is in a chunk
    for c in chunks:
        piece = text[c["start"]:c["end"]]
        if kind == "tokens":
            assert load_tokenizer(None).count(piece) <= size
        if kind == "sentences":
            assert len(sentence_spans(piece, 0, len(piece))) <= size
        if kind == "recursive":
            assert len(piece) <= size
            assert any(s.start <= c["start"] and c["end"] <= s.end for s in split_sections(text))


def test_consecutive_token_windows_share_the_overlap() -> None:
    text = " ".join(f"w{i}" for i in range(20))
    chunks = chunk_document(document(text), ChunkerSpec("tokens", 8, 3))
    assert [c["text"].split()[0] for c in chunks] == ["w0", "w5", "w10", "w15"]
    assert [len(c["text"].split()) for c in chunks] == [8, 8, 8, 5]


def test_sentence_windows_step_by_size_minus_overlap() -> None:
    text = "Un. Deux! Trois? Quatre… Cinq.\nSix"
    chunks = chunk_document(document(text), ChunkerSpec("sentences", 2, 1))
    assert [c["text"] for c in chunks] == ["Un. Deux!", "Deux! Trois?", "Trois? Quatre…", "Quatre… Cinq.",
                                           "Cinq.\nSix"]


def test_recursive_keeps_a_section_whole_when_it_fits_and_splits_by_paragraph_then_sentence() -> None:
    text = "## A\nshort.\n## B\nFirst para one. First para two.\n\nSecond para is here and long. It goes on."
    chunks = chunk_document(document(text), ChunkerSpec("recursive", 40, 0))
    assert [c["text"] for c in chunks] == ["## A\nshort.", "## B\nFirst para one. First para two.",
                                           "Second para is here and long.", "It goes on."]


def test_a_section_chunk_spans_its_section_in_the_text() -> None:
    text = "Intro text.\n## Délais\nRefunds take ten days.\n## Costs\nFree.\n"
    chunks = chunk_document(document(text), ChunkerSpec("sections"))
    for c in chunks:
        body = c["text"].split("\n", 1)[-1]
        assert body in text[c["start"]:c["end"]]
    assert text[chunks[1]["start"]:chunks[1]["end"]] == "## Délais\nRefunds take ten days."


def test_a_chunker_grid_expands_to_plain_names_and_refuses_varying_the_kind() -> None:
    chunkers = {"fixed": {"kind": "fixed", "overlap": 50, "grid": {"size": [800, 200]}},
                "sections": {"kind": "sections"}}
    assert expand_chunkers(chunkers, "c.yaml") == {
        "fixed-size200": {"kind": "fixed", "overlap": 50, "size": 200},
        "fixed-size800": {"kind": "fixed", "overlap": 50, "size": 800}, "sections": {"kind": "sections"}}
    with pytest.raises(InputError, match=r"chunkers\.fixed\.grid: varies 'kind'"):
        expand_chunkers({"fixed": {"kind": "fixed", "grid": {"kind": ["fixed"]}}}, "c.yaml")


def test_one_embedding_pass_per_text_across_chunkers(tmp_path) -> None:
    encoded: list[str] = []

    class Counting:
        def encode_passages(self, texts):
            encoded.extend(texts)
            return np.ones((len(texts), 4), dtype=np.float32)

    key = cache_key({"kind": "fake"})
    first = ["a", "b", "c"]
    vectors, _ = embed_passages(Counting(), first, *load_caches([tmp_path / "one"], key))
    save_cache(tmp_path / "one", key, text_hashes(first), vectors, replace=True)
    second = ["b", "c", "d", "a"]  # another chunker: three texts the first one embedded
    _, count = embed_passages(Counting(), second, *load_caches([tmp_path / "two", tmp_path / "one"], key))
    assert count == 1 and encoded == ["a", "b", "c", "d"]
