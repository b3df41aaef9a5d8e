"""Questions sheets (CSV, TSV, JSONL; one row per label) into native records; every bad row names its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankbench.errors import InputError
from rankbench.io.question_sheet import read_question_sheet


def resolve(document: str, section: str, where: str) -> tuple[str, str | None]:
    """Documents a.md and b.md; a.md has section s1 (heading "Section one")."""
    if document not in ("a.md", "b.md"):
        raise InputError("sheet", where, f"names document {document!r}", "fix")
    return document, {"": None, "Section one": "s1", "s1": "s1"}[section]


def records(path: Path) -> list[dict]:
    return [question.record for question in read_question_sheet(path, resolve)]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_rows_group_by_qid_or_text_and_no_document_is_unanswerable(tmp_path: Path) -> None:
    sheet = write(tmp_path, "q.csv", "question,document,section,grade,qid,audience,as_of\n"
                  "How?,a.md,Section one,2,,,\n"
                  "How?,b.md,,,,staff,2025-01-01\n"
                  "Why?,a.md,,0,x7,,\n"
                  "Why again?,b.md,,0,x7,,\n"
                  "\n"
                  "Nobody knows?,,,,,,\n")
    with pytest.raises(InputError, match=r"q\.csv, line 5: gives question 'Why again\?', but line 4 gives 'Why\?'"):
        records(sheet)
    sheet.write_text(sheet.read_text().replace("Why again?", "Why?"), encoding="utf-8")
    assert records(sheet) == [
        {"qid": "q1", "question": "How?", "kind": "answerable", "audience": "staff", "as_of": "2025-01-01",
         "labels": [{"doc_id": "a.md", "section": "s1", "grade": 2}, {"doc_id": "b.md", "grade": 1}]},
        {"qid": "x7", "question": "Why?", "kind": "unanswerable",
         "labels": [{"doc_id": "a.md", "grade": 0}, {"doc_id": "b.md", "grade": 0}]},
        {"qid": "q2", "question": "Nobody knows?", "kind": "unanswerable", "labels": []},
    ]


def test_tags_split_at_semicolons_and_difficulty_is_kept(tmp_path: Path) -> None:
    sheet = write(tmp_path, "q.csv", "question,document,tags,difficulty\n"
                  "How?,a.md,billing; multi-hop,hard\n"
                  "How?,b.md,,\n"
                  "Why?,a.md,,\n")
    assert records(sheet) == [
        {"qid": "q1", "question": "How?", "kind": "answerable", "tags": ["billing", "multi-hop"], "difficulty": "hard",
         "labels": [{"doc_id": "a.md", "grade": 1}, {"doc_id": "b.md", "grade": 1}]},
        {"qid": "q2", "question": "Why?", "kind": "answerable", "labels": [{"doc_id": "a.md", "grade": 1}]},
    ]


def test_tsv_and_jsonl_sheets_read_the_same(tmp_path: Path) -> None:
    rows = [{"qid": "q1", "question": "How?", "document": "a.md", "section": "s1", "grade": 3, "kind": "policy"},
            {"qid": "q2", "question": "Where?", "document": "b.md", "kind": "policy"}]
    tsv = write(tmp_path, "q.tsv", "qid\tquestion\tdocument\tsection\tgrade\tkind\n"
                + "".join("\t".join(str(row.get(k, "")) for k in ("qid", "question", "document", "section", "grade",
                                                                    "kind")) + "\n" for row in rows))
    jsonl = write(tmp_path, "q.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    expected = [{"qid": "q1", "question": "How?", "kind": "policy",
                 "labels": [{"doc_id": "a.md", "section": "s1", "grade": 3}]},
                {"qid": "q2", "question": "Where?", "kind": "policy", "labels": [{"doc_id": "b.md", "grade": 1}]}]
    assert records(tsv) == expected
    assert records(jsonl) == expected


def test_a_quoted_multiline_cell_keeps_later_line_numbers_right(tmp_path: Path) -> None:
    sheet = write(tmp_path, "q.csv", 'question,document,grade\n"A long\nquestion?",a.md,1\nNext?,a.md,lots\n')
    with pytest.raises(InputError, match=r"q\.csv, line 4: has grade 'lots'"):
        records(sheet)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x1c", "\x1d", "\x1e", "\x85", "\x0b", "\x0c"])
def test_unicode_line_separators_in_a_cell_are_text_and_lines_count_real_newlines(tmp_path: Path,
                                                                                  separator: str) -> None:
    """str.splitlines() broke lines at these: the cell was split and errors named a later line than the real one."""
    for suffix, delimiter in ((".csv", ","), (".tsv", "\t")):
        text = (f"question{delimiter}document{delimiter}grade\nWhat{separator}is it?{delimiter}a.md{delimiter}1\n"
                f"Next?{delimiter}a.md{delimiter}lots\n")
        with pytest.raises(InputError, match=rf"q{suffix}, line 3: has grade 'lots'"):
            records(write(tmp_path, f"q{suffix}", text))
        good = write(tmp_path, f"q{suffix}", text.replace("lots", "2"))
        assert records(good)[0]["question"] == f"What{separator}is it?"


@pytest.mark.parametrize("text, expected", [
    ("question,documnet\nHow?,a.md\n", r"line 1: has unknown column\(s\) 'documnet'"),
    ("document\na.md\n", "line 1: has no `question` column"),
    ("question,document\n,a.md\n", "line 2: has no question text"),
    ("question,document,grade\nHow?,a.md,1.5\n", "line 2: has grade '1.5', which is not a whole number"),
    ("question,document,audience\nHow?,a.md,everyone\n", "line 2: has audience 'everyone'"),
    ("question,document,as_of\nHow?,a.md,2025-13-01\n", "line 2: has as_of '2025-13-01', which is not a date"),
    ("question,document,section\nHow?,,s1\n", "line 2: gives a section, grade or evidence but no document"),
    ("question,document\nHow?,a.md\nHow?,a.md\n", "lines 2 and 3: label 'a.md' twice"),
    ("question,document\nHow?,c.md\n", "line 2: names document 'c.md'"),
    ("qid,question,document\nq 1,How?,a.md\n", "line 2: qid 'q 1' is empty or contains whitespace"),
    ("question,document\nHow?,a.md,extra\n", "line 2: has 3 cells, the header 2"),
    ("question,document\n", "holds no question"),
    ("question,document,tags\nHow?,a.md,a;a\n", "line 2: .*tags"),
    ("question,document,difficulty\nHow?,a.md,hard\nHow?,b.md,easy\n", "line 3: gives difficulty 'easy'"),
    ("question,document,difficulty\nHow?,a.md,a|b\n", "line 2: difficulty 'a|b' cannot name a table row"),
])
def test_bad_rows_name_the_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        records(write(tmp_path, "q.csv", text))


def test_a_sheet_of_another_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"q\.xlsx: has the extension '\.xlsx'"):
        records(write(tmp_path, "q.xlsx", "x"))


def test_a_cell_guarded_against_formulas_reads_as_its_text(tmp_path: Path) -> None:
    """A sheet saved from one of our CSV files keeps the ' that neutralised a formula: it is not part of the text."""
    sheet = write(tmp_path, "q.csv", "question,document\n'=1+1 or more?,a.md\n'twas?,b.md\n")
    assert [record["question"] for record in records(sheet)] == ["=1+1 or more?", "'twas?"]
