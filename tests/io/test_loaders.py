"""Tests of rankbench.io.loaders: native corpus / question JSONL, BEIR folders, and their error messages."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankbench.errors import InputError
from rankbench.io.loaders import (
    BREAKDOWN_COLUMNS,
    DOCUMENT_COLUMNS,
    EVIDENCE_COLUMNS,
    LABEL_COLUMNS,
    QUESTION_COLUMNS,
    load_beir_corpus,
    load_beir_questions,
    load_corpus,
    load_questions,
    read_qrels_tsv,
)
from rankbench.io.trec import read_trec_qrels

SCHEMAS = Path(__file__).resolve().parents[2] / "workflow" / "schemas"
CORPUS_SCHEMA = yaml.safe_load((SCHEMAS / "corpus.schema.yaml").read_text(encoding="utf-8"))
QUESTIONS_SCHEMA = yaml.safe_load((SCHEMAS / "questions.schema.yaml").read_text(encoding="utf-8"))


def doc(doc_id: str = "d1", **fields: object) -> dict[str, object]:
    return {"doc_id": doc_id, "title": "T", "text": "## A\nalpha", **fields}


def question(qid: str = "q1", **fields: object) -> dict[str, object]:
    record: dict[str, object] = {"qid": qid, "question": "what?", "labels": [{"doc_id": "d1", "grade": 1}]}
    record.update(fields)
    return record


def write_lines(path: Path, lines: list[object]) -> Path:
    """Write JSON objects (dicts) or raw lines (str) one per line."""
    text = "\n".join(line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def load_error(loader, schema: dict, path: Path, lines: list[object]) -> str:
    """The InputError message of loading these lines; it must name the file."""
    write_lines(path, lines)
    with pytest.raises(InputError) as info:
        loader(path, schema)
    message = str(info.value)
    assert str(path) in message, message
    return message


def corpus_error(tmp_path: Path, lines: list[object]) -> str:
    return load_error(load_corpus, CORPUS_SCHEMA, tmp_path / "corpus.jsonl", lines)


def questions_error(tmp_path: Path, lines: list[object]) -> str:
    return load_error(load_questions, QUESTIONS_SCHEMA, tmp_path / "v1.jsonl", lines)


# --------------------------------------------------------------------------- native corpus: accepted input


def test_corpus_loads_in_file_order_with_defaults_and_metadata(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "corpus.jsonl", [
        doc("b", source="wiki", tags=["x", "y"]),
        {"doc_id": "a", "text": "body", "audience": "staff", "valid_from": "2020-01-01", "valid_to": "2021-01-01",
         "lang": "fr"},
    ])
    documents = load_corpus(path, CORPUS_SCHEMA)
    assert list(documents.columns) == DOCUMENT_COLUMNS
    assert documents["doc_id"].tolist() == ["b", "a"]
    first, second = documents.iloc[0], documents.iloc[1]
    assert first["audience"] == "public" and first["title"] == "T"
    assert json.loads(first["metadata"]) == {"source": "wiki", "tags": ["x", "y"]}
    assert second["title"] == "" and second["audience"] == "staff" and second["lang"] == "fr"
    assert (second["valid_from"], second["valid_to"]) == ("2020-01-01", "2021-01-01")
    assert json.loads(second["metadata"]) == {}


def test_corpus_accepts_bom_crlf_blank_lines_and_unicode_ids(tmp_path: Path) -> None:
    lines = [json.dumps(doc("réglement-été"), ensure_ascii=False), "", "   ",
             json.dumps(doc("文書-2", text="本文"), ensure_ascii=False), ""]
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8"))
    documents = load_corpus(path, CORPUS_SCHEMA)
    assert documents["doc_id"].tolist() == ["réglement-été", "文書-2"]
    assert documents["text"].tolist() == ["## A\nalpha", "本文"]


def test_unicode_metadata_is_kept_verbatim(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "corpus.jsonl", [doc("d1", auteur="Zoë", nested={"k": [1, 2]})])
    metadata = json.loads(load_corpus(path, CORPUS_SCHEMA)["metadata"].iloc[0])
    assert metadata == {"auteur": "Zoë", "nested": {"k": [1, 2]}}


# --------------------------------------------------------------------------- native corpus: errors


def test_malformed_json_line_names_line(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, [doc("d1"), '{"doc_id": "d2", "text": '])
    assert "line 2" in message and "JSON" in message and "fix or remove" in message


def test_non_object_line(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, [doc("d1"), "[1, 2]"])
    assert "line 2" in message and "list" in message and "one JSON object" in message


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(json.dumps(doc("d1")).encode() + b"\n\n" + b'{"doc_id": "d\xff", "text": "x"}\n')
    with pytest.raises(InputError) as info:
        load_corpus(path, CORPUS_SCHEMA)
    message = str(info.value)
    assert str(path) in message and "line 3" in message and "UTF-8" in message


def test_missing_required_field(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, [doc("d1"), {"doc_id": "d2", "title": "no text"}])
    assert "line 2" in message and "'d2'" in message and "text" in message and "Fix" in message


def test_wrong_type(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, [doc("d1", text=42)])
    assert "line 1" in message and "'d1'" in message and "text" in message and "string" in message


def test_bad_audience_value(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, [doc("d1", audience="everyone")])
    assert "line 1" in message and "audience" in message


def test_duplicate_key_in_one_object(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, ['{"doc_id": "d1", "text": "a", "text": "b"}'])
    assert "line 1" in message and "duplicate key" in message and "'text'" in message


def test_duplicate_doc_id_names_both_lines(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, [doc("d1"), doc("d2"), "", doc("d1")])
    assert "lines 1 and 4" in message and "'d1'" in message and "unique" in message


@pytest.mark.parametrize("content", ["", "\n\n  \n", "\ufeff"])
def test_empty_corpus(tmp_path: Path, content: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="no document") as info:
        load_corpus(path, CORPUS_SCHEMA)
    assert str(path) in str(info.value) and "at least one document" in str(info.value)


@pytest.mark.parametrize("bad", ["2023-02-30", "2023-13-01", "23-01-01", "2023/01/01"])
def test_invalid_date(tmp_path: Path, bad: str) -> None:
    message = corpus_error(tmp_path, [doc("d1"), doc("d2", valid_from=bad)])
    assert "line 2" in message and "'d2'" in message and "valid_from" in message


@pytest.mark.parametrize("valid_from,valid_to", [("2024-01-01", "2024-01-01"), ("2024-06-01", "2024-01-01")])
def test_valid_from_not_before_valid_to(tmp_path: Path, valid_from: str, valid_to: str) -> None:
    message = corpus_error(tmp_path, [doc("d1", valid_from=valid_from, valid_to=valid_to)])
    assert "line 1" in message and "'d1'" in message and "valid_from is not before valid_to" in message
    assert "half-open" in message


def test_open_ended_validity_is_accepted(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "corpus.jsonl", [doc("d1", valid_from="2024-01-01", valid_to=None),
                                                   doc("d2", valid_from=None, valid_to="2024-01-01")])
    documents = load_corpus(path, CORPUS_SCHEMA)
    assert documents["valid_from"].iloc[0] == "2024-01-01"
    assert documents["valid_to"].iloc[1] == "2024-01-01"


# --------------------------------------------------------------------------- questions


def test_questions_and_labels(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "v1.jsonl", [
        question("q1", kind="paraphrase", audience="staff", as_of="2025-01-31",
                 labels=[{"doc_id": "d1", "section": "a", "grade": 3}, {"doc_id": "d2", "grade": 0}]),
        question("q2", kind="unanswerable", labels=[]),
    ])
    questions, labels = load_questions(path, QUESTIONS_SCHEMA)
    assert list(questions.columns) == QUESTION_COLUMNS + BREAKDOWN_COLUMNS
    assert list(labels.columns) == LABEL_COLUMNS + EVIDENCE_COLUMNS
    assert labels["evidence"].isna().all()
    assert questions["qid"].tolist() == ["q1", "q2"]
    assert questions["kind"].tolist() == ["paraphrase", "unanswerable"]
    assert questions["audience"].tolist() == ["staff", "public"]
    assert questions["as_of"].iloc[0] == "2025-01-31"
    assert labels["qid"].tolist() == ["q1", "q1"]
    assert labels["section"].iloc[0] == "a" and labels["section"].isna().iloc[1]
    assert labels["grade"].tolist() == [3, 0]


def test_duplicate_qid(tmp_path: Path) -> None:
    message = questions_error(tmp_path, [question("q1"), question("q2"), question("q1")])
    assert "lines 1 and 3" in message and "'q1'" in message and "renumber" in message


def test_empty_question_file(tmp_path: Path) -> None:
    message = questions_error(tmp_path, ["", ""])
    assert "no question" in message and "at least one question" in message


def test_question_missing_labels_field(tmp_path: Path) -> None:
    message = questions_error(tmp_path, [{"qid": "q7", "question": "x"}])
    assert "line 1" in message and "'q7'" in message and "labels" in message


@pytest.mark.parametrize("grade", ["3", 1.5, True, None, 1e300, 2**31])
def test_bad_grade(tmp_path: Path, grade: object) -> None:
    message = questions_error(tmp_path, [question("q9", labels=[{"doc_id": "d1", "grade": grade}])])
    assert "line 1" in message and "'q9'" in message and "grade" in message


def test_any_integer_grade_as_trec_eval_and_2_0_reads_as_2(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "v1.jsonl", [question("q1", labels=[
        {"doc_id": "d1", "grade": 4}, {"doc_id": "d2", "grade": -1}, {"doc_id": "d3", "grade": 2.0}])])
    labels = load_questions(path, QUESTIONS_SCHEMA)[1]
    assert labels["grade"].tolist() == [4, -1, 2] and labels["grade"].dtype == "int64"
    message = questions_error(tmp_path, [question("q1"), question("q2", labels=[{"doc_id": "d1", "grade": 2.5}])])
    assert "line 2 (qid 'q2')" in message and "grade 2.5 is not an integer" in message


@pytest.mark.parametrize("record, expected", [
    (question("q1", question=""), "question"),
    (question("q1", question=" \t\u00a0"), "blank question text"),
    (question("q 1"), "qid 'q 1' is empty or contains whitespace"),
    (question("q1", kind="a|b"), "kind 'a|b' cannot name a table row"),
    (question("q1", kind="two\nlines"), "cannot name a table row"),
    (question("q1", kind="  "), "cannot name a table row"),
    (question("q1", kind=" padded"), "cannot name a table row"),
])
def test_questions_that_cannot_be_asked_or_reported_are_refused(tmp_path: Path, record: dict[str, object],
                                                                expected: str) -> None:
    message = questions_error(tmp_path, [question("q0", kind="x"), {"kind": "x", **record}])
    assert "line 2" in message and expected in message, message


def test_a_kind_left_out_among_kinds_is_refused(tmp_path: Path) -> None:
    message = questions_error(tmp_path, [question("q1", kind="policy"), question("q2")])
    assert "line 2 (qid 'q2'): has no kind" in message and "line 1" in message and "or none" in message
    path = write_lines(tmp_path / "none.jsonl", [question("q1"), question("q2")])  # no kinds at all: the default
    assert load_questions(path, QUESTIONS_SCHEMA)[0]["kind"].tolist() == ["answerable", "answerable"]


def test_kind_all_is_reserved(tmp_path: Path) -> None:
    message = questions_error(tmp_path, [question("q1", kind="all")])
    assert "kind" in message


def test_tags_and_difficulty_are_read_when_given(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "v1.jsonl", [question("q1", tags=["billing", "multi-hop"], difficulty="hard"),
                                               question("q2")])
    questions = load_questions(path, QUESTIONS_SCHEMA)[0]
    assert questions["tags"].tolist() == [["billing", "multi-hop"], []]
    assert questions["difficulty"].iloc[0] == "hard" and questions["difficulty"].isna().iloc[1]


@pytest.mark.parametrize(("fields", "expected"), [
    ({"tags": "billing"}, "tags"),  # a string, not a list
    ({"tags": ["billing", "billing"]}, "tags"),  # the same tag twice
    ({"tags": [""]}, "tags"),
    ({"tags": ["a|b"]}, "tag 'a|b' cannot name a table row"),
    ({"tags": [" padded"]}, "tag ' padded' cannot name a table row"),
    ({"difficulty": 3}, "difficulty"),  # a number: difficulty is a label (easy, medium, hard)
    ({"difficulty": "very\nhard"}, "difficulty 'very\\nhard' cannot name a table row"),
])
def test_bad_tags_or_difficulty_name_file_line_and_field(tmp_path: Path, fields: dict, expected: str) -> None:
    message = questions_error(tmp_path, [question("q1"), question("q2", **fields)])
    assert "line 2" in message and "'q2'" in message and expected in message, message


def test_invalid_as_of(tmp_path: Path) -> None:
    message = questions_error(tmp_path, [question("q1"), question("q2", as_of="2025-02-29")])
    assert "line 2" in message and "'q2'" in message and "as_of" in message and "YYYY-MM-DD" in message


def test_duplicate_label_same_doc_and_section(tmp_path: Path) -> None:
    labels = [{"doc_id": "d1", "section": "a", "grade": 1}, {"doc_id": "d1", "section": "b", "grade": 1},
              {"doc_id": "d1", "section": "a", "grade": 2}]
    message = questions_error(tmp_path, [question("q1"), question("q2", labels=labels)])
    assert "line 2" in message and "'q2'" in message and "twice" in message and "one label" in message


def test_duplicate_document_level_label(tmp_path: Path) -> None:
    labels = [{"doc_id": "d1", "grade": 1}, {"doc_id": "d1", "section": None, "grade": 2}]
    message = questions_error(tmp_path, [question("q3", labels=labels)])
    assert "'q3'" in message and "twice" in message


def test_same_doc_different_sections_is_fine(tmp_path: Path) -> None:
    labels = [{"doc_id": "d1", "section": "a", "grade": 1}, {"doc_id": "d1", "section": "b", "grade": 2},
              {"doc_id": "d1", "grade": 1}]
    _, loaded = load_questions(write_lines(tmp_path / "v1.jsonl", [question("q1", labels=labels)]), QUESTIONS_SCHEMA)
    assert len(loaded) == 3


def test_questions_duplicate_key(tmp_path: Path) -> None:
    message = questions_error(tmp_path, ['{"qid": "q1", "qid": "q2", "question": "x", "labels": []}'])
    assert "line 1" in message and "duplicate key" in message and "'qid'" in message


# --------------------------------------------------------------------------- BEIR


def write_beir(folder: Path, qrels: str, queries: list[dict[str, object]] | None = None) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    corpus = write_lines(folder / "corpus.jsonl", [
        {"_id": "d1", "title": "One", "text": "first", "url": "http://x"},
        {"_id": "d2", "text": "second"},
    ])
    queries_path = write_lines(folder / "queries.jsonl", queries if queries is not None else [
        {"_id": "q1", "text": "query one"}, {"_id": "q2", "text": "query two"}, {"_id": "q3", "text": "not judged"},
    ])
    (folder / "qrels").mkdir(exist_ok=True)
    qrels_path = folder / "qrels" / "test.tsv"
    qrels_path.write_text(qrels, encoding="utf-8")
    return corpus, queries_path, qrels_path


def test_beir_folder_loads(tmp_path: Path) -> None:
    corpus, queries, qrels = write_beir(tmp_path / "beir",
                                        "query-id\tcorpus-id\tscore\nq2\td1\t1\nq1\td2\t2\nq2\td2\t0\n")
    documents = load_beir_corpus(corpus)
    assert list(documents.columns) == DOCUMENT_COLUMNS
    assert documents["doc_id"].tolist() == ["d1", "d2"]
    assert documents["title"].tolist() == ["One", ""]
    assert json.loads(documents["metadata"].iloc[0]) == {"url": "http://x"}
    questions, labels = load_beir_questions(queries, qrels)
    # Only judged queries, in qrels order; the unjudged q3 is not a question of this split.
    assert questions["qid"].tolist() == ["q2", "q1"]
    assert questions["question"].tolist() == ["query two", "query one"]
    assert set(questions["kind"]) == {"beir"}
    assert labels[["qid", "doc_id", "grade"]].values.tolist() == [["q2", "d1", 1], ["q1", "d2", 2], ["q2", "d2", 0]]
    assert labels["section"].isna().all()


def test_beir_qrels_without_header(tmp_path: Path) -> None:
    path = tmp_path / "test.tsv"
    path.write_text("q1\td1\t1\n", encoding="utf-8")
    assert read_qrels_tsv(path)[["qid", "doc_id", "grade"]].values.tolist() == [["q1", "d1", 1]]


def test_beir_judged_query_missing_from_queries(tmp_path: Path) -> None:
    _, queries, qrels = write_beir(tmp_path / "beir", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\n")
    with pytest.raises(InputError) as info:
        load_beir_questions(queries, qrels)
    message = str(info.value)
    assert str(qrels) in message and "'q9'" in message and "queries.jsonl" in message


def test_beir_duplicate_judgement(tmp_path: Path) -> None:
    _, _, qrels = write_beir(tmp_path / "beir", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n")
    with pytest.raises(InputError) as info:
        read_qrels_tsv(qrels)
    message = str(info.value)
    assert str(qrels) in message and "'q1'" in message and "'d1'" in message and "more than once" in message


def test_beir_qrels_are_checked_as_trec_qrels_are(tmp_path: Path) -> None:
    """One qrels check for every format: an exact repeat is kept once (as trec_eval reads it), two grades for one
    pair name both lines."""
    _, _, qrels = write_beir(tmp_path / "beir", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t1\nq2\td1\t0\n")
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 d1 1\nq1 0 d1 1\nq2 0 d1 0\n")
    beir = read_qrels_tsv(qrels)
    assert beir[["qid", "doc_id", "grade"]].values.tolist() == read_trec_qrels(trec).values.tolist()
    _, _, conflict = write_beir(tmp_path / "two", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n")
    with pytest.raises(InputError, match="lines 2 and 3"):
        read_qrels_tsv(conflict)


@pytest.mark.parametrize("score", ["1.5", "high", ""])
def test_beir_non_integer_score(tmp_path: Path, score: str) -> None:
    _, _, qrels = write_beir(tmp_path / "beir", f"query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t{score}\n")
    with pytest.raises(InputError) as info:
        read_qrels_tsv(qrels)
    message = str(info.value)
    assert str(qrels) in message and "line 3" in message and "integer" in message


def test_beir_wrong_field_count(tmp_path: Path) -> None:
    _, _, qrels = write_beir(tmp_path / "beir", "query-id\tcorpus-id\tscore\nq1 d1 1\n")
    with pytest.raises(InputError, match=r"line 2.*expected 3"):
        read_qrels_tsv(qrels)


def test_beir_corpus_line_without_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "x"}, {"text": "no id"}])
    with pytest.raises(InputError) as info:
        load_beir_corpus(path)
    assert "line 2" in str(info.value) and "_id" in str(info.value)


def test_beir_duplicate_corpus_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "x"}, {"_id": "d1", "text": "y"}])
    with pytest.raises(InputError, match="lines 1 and 2"):
        load_beir_corpus(path)


def test_beir_query_line_without_text(tmp_path: Path) -> None:
    _, queries, qrels = write_beir(tmp_path / "beir", "q1\td1\t1\n", queries=[{"_id": "q1"}])
    with pytest.raises(InputError) as info:
        load_beir_questions(queries, qrels)
    assert str(queries) in str(info.value) and "line 1" in str(info.value)


# --------------------------------------------------------------------------- property: never another exception

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)
_field_values = st.one_of(
    _json_values, st.sampled_from(["2024-01-01", "2023-12-31", "2024-02-30", "public", "staff", "d1", "d2", ""]))
_records = st.dictionaries(
    st.sampled_from(["doc_id", "title", "text", "version", "valid_from", "valid_to", "audience", "lang", "extra"]),
    _field_values, max_size=8,
).map(lambda record: json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
_plausible = st.fixed_dictionaries(
    {"doc_id": st.text(min_size=1, max_size=4), "text": st.text(max_size=20)},
    optional={"valid_from": _field_values, "valid_to": _field_values, "audience": _field_values,
              "title": st.text(max_size=5), "meta": _json_values},
).map(lambda record: json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
_lines = st.one_of(_plausible, _records, st.binary(max_size=30),
                   st.text(max_size=30).map(lambda t: t.encode("utf-8", "surrogatepass")))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_lines, max_size=6), separator=st.sampled_from([b"\n", b"\r\n"]), bom=st.booleans())
def test_arbitrary_input_loads_or_raises_input_error(tmp_path: Path, lines: list[bytes], separator: bytes,
                                                     bom: bool) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + separator.join(lines))
    try:
        documents = load_corpus(path, CORPUS_SCHEMA)
    except InputError as error:
        assert str(path) in str(error)
    else:
        assert len(documents) >= 1
        assert documents["doc_id"].is_unique
        assert documents["audience"].isin(["public", "staff"]).all()


# --------------------------------------------------------------------------- odd ids, grades and values (issue 12)


def test_beir_grades_read_as_integers_like_native_ones(tmp_path: Path) -> None:
    _, _, qrels = write_beir(tmp_path / "beir", "query-id\tcorpus-id\tscore\nq1\td1\t2.0\nq1\td2\t-1\nq2\td1\t7\n")
    assert read_qrels_tsv(qrels)["grade"].tolist() == [2, -1, 7]


@pytest.mark.parametrize("qrels, expected", [
    ("q1\td1\t1\nq 2\td1\t1\n", "line 2: query-id 'q 2' is empty or contains whitespace"),
    ("q1\td 1\t1\n", "line 1: corpus-id 'd 1'"),
    ("q1\td1\t2.5\n", "line 1 (query 'q1', document 'd1'): grade '2.5' is not an integer"),
])
def test_beir_qrels_ids_and_grades_name_the_line(tmp_path: Path, qrels: str, expected: str) -> None:
    _, _, path = write_beir(tmp_path / "beir", qrels)
    with pytest.raises(InputError, match=re.escape(expected)):
        read_qrels_tsv(path)


def test_beir_judged_queries_need_text(tmp_path: Path) -> None:
    queries = [{"_id": "q1", "text": "ok"}, {"_id": "q2", "text": " \t"}]
    _, queries_path, qrels = write_beir(tmp_path / "beir", "q1\td1\t1\nq2\td1\t1\n", queries=queries)
    with pytest.raises(InputError, match=re.escape("queries.jsonl, line 2 (_id 'q2'): has a blank question text")):
        load_beir_questions(queries_path, qrels)


def test_beir_corpus_id_with_whitespace(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "x"}, {"_id": "d 2", "text": "y"}])
    with pytest.raises(InputError, match=r"line 2: _id 'd 2' is empty or contains whitespace"):
        load_beir_corpus(path)


def test_corpus_doc_id_with_whitespace_names_the_line(tmp_path: Path) -> None:
    message = corpus_error(tmp_path, [doc("d1"), doc("d 2")])
    assert "line 2 (doc_id 'd 2')" in message and "whitespace" in message


def test_ids_that_look_like_paths_or_chunk_ids_are_plain_ids(tmp_path: Path) -> None:
    # Document ids never become file names, and section ids never hold `#`: `x#y`'s chunks stay apart from
    # the chunks of document `x`'s section `y`.
    from rankbench.corpus.chunking import ChunkerSpec, chunk_corpus

    path = write_lines(tmp_path / "corpus.jsonl", [doc("a/b"), doc("../x"), doc("x", text="## Y\nwhy"),
                                                   doc("x#y", text="plain")])
    documents = load_corpus(path, CORPUS_SCHEMA)
    chunks = chunk_corpus(documents, ChunkerSpec())
    assert chunks["chunk_id"].tolist() == ["a/b#a", "../x#a", "x#y", "x#y#_intro"]
    assert chunks["chunk_id"].is_unique


@pytest.mark.parametrize("raw, expected", [
    ('{"doc_id": "d2", "text": "x", "score": NaN}', "NaN is not JSON"),
    ('{"doc_id": "d2", "text": "x", "score": -Infinity}', "-Infinity is not JSON"),
    ('{"doc_id": "d2", "text": "bad \\ud800 half"}', "lone UTF-16 surrogate"),
    ('{"doc_id": "d2", "text": "x", "meta": {"k": "\\udfff"}}', "lone UTF-16 surrogate"),
])
def test_values_no_file_can_hold_are_refused_with_the_line(tmp_path: Path, raw: str, expected: str) -> None:
    message = corpus_error(tmp_path, [doc("d1"), raw])
    assert "line 2" in message and expected in message


def test_surrogate_pairs_and_escaped_backslashes_are_fine(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "corpus.jsonl", ['{"doc_id": "d1", "text": "smile \\ud83d\\ude00 and \\\\ud800"}'])
    assert load_corpus(path, CORPUS_SCHEMA)["text"].tolist() == ["smile \U0001F600 and \\ud800"]


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.jsonl: cannot be read"):
        load_corpus(tmp_path / "missing.jsonl", CORPUS_SCHEMA)
    with pytest.raises(InputError, match=r"missing\.tsv: cannot be read"):
        read_qrels_tsv(tmp_path / "missing.tsv")
