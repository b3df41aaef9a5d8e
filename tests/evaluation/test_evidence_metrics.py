"""Evidence-grain metrics against a brute-force reference: sets of (document, character) pairs, counted."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankbench.corpus.tokens import REGEX_TOKENIZER, Tokenizer, load_tokenizer
from rankbench.errors import InputError
from rankbench.evaluation.evidence import evidence_per_query, evidence_questions

DOCS = ("a", "b", "c")
_span = st.tuples(st.integers(0, 60), st.integers(0, 30)).map(lambda p: (p[0], p[0] + p[1]))


@st.composite
def cases(draw):
    """Random chunks (spans that may overlap, be empty or repeat), evidence labels and a ranking per question."""
    chunks = [(f"c{i}", draw(st.sampled_from(DOCS)), *draw(_span)) for i in range(draw(st.integers(1, 12)))]
    labels, runs = [], []
    for q in range(draw(st.integers(1, 4))):
        for doc in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=3)):
            start, end = draw(_span.filter(lambda s: s[1] > s[0]))
            labels.append((f"q{q}", doc, draw(st.integers(1, 3)), start, end))
        order = draw(st.permutations([c[0] for c in chunks]))
        runs.extend((f"q{q}", chunk_id, rank) for rank, chunk_id in enumerate(order[:draw(st.integers(0, 12))], 1))
    return chunks, labels, runs


def brute_force(chunks, labels, runs, k):
    out = {}
    span = {cid: (doc, s, e) for cid, doc, s, e in chunks}
    for qid in sorted({label[0] for label in labels}):
        wanted = {(doc, i) for q, doc, _, s, e in labels if q == qid for i in range(s, e)}
        top = [cid for q, cid, rank in sorted(runs, key=lambda r: r[2]) if q == qid][:k]
        got = {(span[c][0], i) for c in top for i in range(span[c][1], span[c][2])}
        sent = sum(span[c][2] - span[c][1] for c in top)
        out[qid] = (len(wanted & got) / len(wanted), len(wanted & got) / sent if sent else 0.0, float(2 * len(top)))
    return out


@settings(max_examples=200, deadline=None)
@given(case=cases(), k=st.integers(1, 12))
def test_evidence_metrics_match_a_brute_force_count(case, k) -> None:
    chunks, labels, runs = case
    frame = pd.DataFrame(chunks, columns=["chunk_id", "doc_id", "start", "end"]).assign(text="two words")
    label_frame = pd.DataFrame(labels, columns=["qid", "doc_id", "grade", "evidence_start", "evidence_end"])
    run = pd.DataFrame(runs, columns=["qid", "chunk_id", "rank"])
    questions = pd.DataFrame({"qid": sorted(label_frame["qid"].unique())}).assign(kind="answerable")
    values = evidence_per_query(run, frame, label_frame, questions, [k], 1,
                                Tokenizer("split", lambda text: [(0, 1)] * len(text.split())))
    got = {qid: tuple(group.set_index("metric").loc[["evidence_recall", "evidence_precision", "prompt_tokens"],
                                                    "value"]) for qid, group in values.groupby("qid")}
    expected = brute_force(chunks, labels, runs, k)
    assert got.keys() == expected.keys()
    for qid, triple in expected.items():
        assert got[qid] == pytest.approx(triple, abs=1e-12)


def test_only_questions_whose_every_relevant_label_has_evidence_are_scored_so() -> None:
    labels = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2", "q3"], "doc_id": ["a", "b", "a", "b", "a"],
                           "grade": [2, 0, 2, 1, 0], "evidence_start": pd.array([0, None, 0, None, 0], "Int64"),
                           "evidence_end": pd.array([5, None, 5, None, 5], "Int64")})
    # q1: its one relevant label has evidence (the grade-0 one needs none); q2: one relevant label lacks it; q3: no
    # relevant label
    assert evidence_questions(labels, 1) == ["q1"]
    assert evidence_questions(labels.drop(columns=["evidence_start", "evidence_end"]), 1) == []


def test_the_regex_fallback_counts_words_and_punctuation(tmp_path) -> None:
    counter = load_tokenizer(None)
    assert counter.name == REGEX_TOKENIZER and counter.count("Le dépôt : 300 €, rendu.") == 8
    assert load_tokenizer("regex").name == REGEX_TOKENIZER


@pytest.mark.parametrize("name", ["missing/tokenizer.json", "folder"])
def test_a_named_tokenizer_that_cannot_be_read_is_refused_not_replaced_by_the_regex(tmp_path, name: str) -> None:
    """A missing file, or a folder without tokenizer.json, once counted with the regex while the pages named it."""
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match=r"neither an existing tokenizer\.json|folder without a tokenizer\.json"):
        load_tokenizer(str(tmp_path / name))
