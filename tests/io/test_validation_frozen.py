"""Tests of rankbench.corpus.label_checks (label checks and findings) and rankbench.io.frozen (+ `rankbench freeze`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rankbench.cli import main
from rankbench.corpus.label_checks import (
    FINDING_COLUMNS,
    check_label_targets,
    label_findings,
)
from rankbench.corpus.validity import in_force
from rankbench.errors import InputError
from rankbench.io.frozen import check_frozen, content_hash, freeze, frozen_digest, read_lock
from rankbench.io.loaders import load_corpus, load_questions
from rankbench.report.labels import findings_markdown

SCHEMAS = Path(__file__).resolve().parents[2] / "workflow" / "schemas"
CORPUS_SCHEMA = yaml.safe_load((SCHEMAS / "corpus.schema.yaml").read_text(encoding="utf-8"))
QUESTIONS_SCHEMA = yaml.safe_load((SCHEMAS / "questions.schema.yaml").read_text(encoding="utf-8"))

CORPUS = [
    {"doc_id": "old", "title": "Returns", "text": "## Deadline\n30 days.\n\n## Refund\nTo the card.",
     "valid_from": "2023-01-01", "valid_to": "2025-03-01"},
    {"doc_id": "new", "title": "Returns", "text": "## Deadline\n14 days.\n\n## Refund\nWithin a week.",
     "valid_from": "2025-03-01", "valid_to": None},
    {"doc_id": "staff", "title": "Escalation", "text": "## Level two\nAfter 48 hours.", "audience": "staff"},
    {"doc_id": "plain", "title": "Plain", "text": "No headings at all."},
]


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def documents(tmp_path: Path) -> pd.DataFrame:
    return load_corpus(write_jsonl(tmp_path / "corpus.jsonl", CORPUS), CORPUS_SCHEMA)


def load(tmp_path: Path, records: list[dict[str, object]]) -> tuple[Path, pd.DataFrame, pd.DataFrame]:
    path = write_jsonl(tmp_path / "v1.jsonl", records)
    questions, labels = load_questions(path, QUESTIONS_SCHEMA)
    return path, questions, labels


# --------------------------------------------------------------------------- check_label_targets


def test_valid_labels_pass_including_mixed_section_and_document_labels(tmp_path: Path,
                                                                       documents: pd.DataFrame) -> None:
    # One label with a section and one without in the same file: the section column then holds
    # strings and missing values, and a missing section must not be taken for a section named "nan".
    path, _, labels = load(tmp_path, [
        {"qid": "q1", "question": "x", "labels": [{"doc_id": "new", "section": "deadline", "grade": 3},
                                                   {"doc_id": "plain", "grade": 1}]},
        {"qid": "q2", "question": "y", "labels": [{"doc_id": "staff", "section": "level-two", "grade": 1}]},
    ])
    check_label_targets(labels, documents, path)  # no exception
    assert labels["section"].isna().sum() == 1


def test_label_on_missing_document(tmp_path: Path, documents: pd.DataFrame) -> None:
    path, _, labels = load(tmp_path, [
        {"qid": "q1", "question": "x", "labels": [{"doc_id": "new", "grade": 1}]},
        {"qid": "q2", "question": "y", "labels": [{"doc_id": "gone", "grade": 1}]},
    ])
    with pytest.raises(InputError) as info:
        check_label_targets(labels, documents, path)
    message = str(info.value)
    assert str(path) in message and "'q2'" in message and "'gone'" in message and "not in the corpus" in message
    assert "new question-set version" in message


def test_label_on_missing_section_lists_known_sections(tmp_path: Path, documents: pd.DataFrame) -> None:
    path, _, labels = load(tmp_path, [
        {"qid": "q5", "question": "x", "labels": [{"doc_id": "old", "section": "refunds", "grade": 1},
                                                   {"doc_id": "plain", "grade": 1}]},
    ])
    with pytest.raises(InputError) as info:
        check_label_targets(labels, documents, path)
    message = str(info.value)
    assert "'q5'" in message and "'refunds'" in message and "'old'" in message
    assert "deadline, refund" in message and "slugs of the headings" in message


def test_intro_section_of_headingless_document(tmp_path: Path, documents: pd.DataFrame) -> None:
    path, _, labels = load(tmp_path, [
        {"qid": "q1", "question": "x", "labels": [{"doc_id": "plain", "section": "_intro", "grade": 1}]}])
    check_label_targets(labels, documents, path)
    path, _, labels = load(tmp_path, [
        {"qid": "q1", "question": "x", "labels": [{"doc_id": "plain", "section": "intro", "grade": 1}]}])
    with pytest.raises(InputError, match="it has: _intro"):
        check_label_targets(labels, documents, path)


# --------------------------------------------------------------------------- in_force


@pytest.mark.parametrize("valid_from,valid_to,as_of,expected", [
    ("2024-01-01", "2025-01-01", "2024-01-01", True),    # start is inclusive
    ("2024-01-01", "2025-01-01", "2025-01-01", False),   # end is exclusive
    ("2024-01-01", "2025-01-01", "2024-12-31", True),
    ("2024-01-01", "2025-01-01", "2023-12-31", False),
    (None, "2025-01-01", "1900-01-01", True),            # open start
    ("2024-01-01", None, "2999-01-01", True),            # open end
    ("2024-01-01", None, "2023-12-31", False),
    ("2024-01-01", "2025-01-01", None, True),            # undated question: everything is in force
    (None, None, "2024-06-01", True),
])
def test_in_force_half_open_interval(valid_from: str | None, valid_to: str | None, as_of: str | None,
                                     expected: bool) -> None:
    result = in_force(pd.Series([valid_from], dtype=object), pd.Series([valid_to], dtype=object),
                      pd.Series([as_of], dtype=object))
    assert result.tolist() == [expected]


def test_in_force_vectorised_on_string_columns() -> None:
    valid_from = pd.Series(["2024-01-01", None, "2024-01-01"], dtype="str")
    valid_to = pd.Series(["2025-01-01", "2024-01-01", None], dtype="str")
    as_of = pd.Series(["2025-01-01", "2023-12-31", "2024-01-01"], dtype="str")
    assert in_force(valid_from, valid_to, as_of).tolist() == [False, True, True]


# --------------------------------------------------------------------------- label_findings


def test_label_findings(tmp_path: Path, documents: pd.DataFrame) -> None:
    _, questions, labels = load(tmp_path, [
        # Fine: the new document is in force in June 2025; the stale old one is graded 0 (not a finding).
        {"qid": "ok", "question": "a", "as_of": "2025-06-01",
         "labels": [{"doc_id": "new", "section": "deadline", "grade": 3},
                    {"doc_id": "old", "section": "deadline", "grade": 0}]},
        # Stale: the old document expired on 2025-03-01 (exclusive end).
        {"qid": "stale", "question": "b", "as_of": "2025-03-01",
         "labels": [{"doc_id": "old", "section": "deadline", "grade": 2}]},
        # Leak: public question, staff-only document; a staff question may use it.
        {"qid": "leak", "question": "c", "audience": "public", "labels": [{"doc_id": "staff", "grade": 1}]},
        {"qid": "internal", "question": "d", "audience": "staff", "labels": [{"doc_id": "staff", "grade": 1}]},
        # Unanswerable: no label at all, or only grade-0 labels.
        {"qid": "none", "question": "e", "labels": []},
        {"qid": "zeros", "question": "f", "labels": [{"doc_id": "plain", "grade": 0}]},
        # A grade-0 label on a staff document for a public question is no leak either.
        {"qid": "zero-staff", "question": "g", "labels": [{"doc_id": "staff", "grade": 0},
                                                          {"doc_id": "plain", "grade": 1}]},
    ])
    findings = label_findings(questions, labels, documents)
    assert list(findings.columns) == FINDING_COLUMNS
    by_problem = {problem: sorted(group["qid"]) for problem, group in findings.groupby("problem")}
    assert by_problem == {
        "relevant label not in force at the question's as_of": ["stale"],
        "public question labelled with a staff-only document": ["leak"],
        "no relevant label (unanswerable: excluded from averages)": ["none", "zeros"],
    }
    stale = findings[findings["qid"] == "stale"].iloc[0]
    assert (stale["doc_id"], stale["section"], stale["grade"]) == ("old", "deadline", 2)
    markdown = findings_markdown(findings, "v1")
    assert markdown.startswith("# Label validation: v1")
    assert "**no relevant label (unanswerable: excluded from averages)**: 2 (none, zeros)" in markdown


def test_label_findings_undated_questions_have_no_stale_findings(tmp_path: Path, documents: pd.DataFrame) -> None:
    _, questions, labels = load(tmp_path, [
        {"qid": "q1", "question": "a", "labels": [{"doc_id": "old", "grade": 1}, {"doc_id": "new", "grade": 1}]}])
    findings = label_findings(questions, labels, documents)
    assert findings.empty
    assert findings_markdown(findings, "v1").endswith("No findings.\n")


def test_label_findings_on_the_valid_from_day(tmp_path: Path, documents: pd.DataFrame) -> None:
    _, questions, labels = load(tmp_path, [
        {"qid": "q1", "question": "a", "as_of": "2025-03-01", "labels": [{"doc_id": "new", "grade": 1}]},
        {"qid": "q2", "question": "b", "as_of": "2025-02-28", "labels": [{"doc_id": "new", "grade": 1}]}])
    findings = label_findings(questions, labels, documents)
    assert findings["qid"].tolist() == ["q2"]


def test_labels_that_map_to_no_chunk_are_findings_per_chunker(tmp_path: Path, documents: pd.DataFrame) -> None:
    _, questions, labels = load(tmp_path, [
        {"qid": "q1", "question": "a", "labels": [{"doc_id": "new", "section": "refund", "grade": 2}]},
        {"qid": "q2", "question": "b", "labels": [{"doc_id": "plain", "grade": 1}]}])
    whole = pd.DataFrame({"chunk_id": ["new#1", "plain#1"], "doc_id": ["new", "plain"],
                          "sections": [["deadline", "refund"], []]})
    lossy = pd.DataFrame({"chunk_id": ["new#1"], "doc_id": ["new"], "sections": [["deadline"]]})
    findings = label_findings(questions, labels, documents, {"whole": whole, "lossy": lossy})
    assert findings[["problem", "qid", "doc_id"]].values.tolist() == [
        ["label maps to no chunk of chunker lossy", "q1", "new"],
        ["label maps to no chunk of chunker lossy", "q2", "plain"]]
    assert "**label maps to no chunk of chunker lossy**: 2 (q1, q2)" in findings_markdown(findings, "v1")


# --------------------------------------------------------------------------- frozen versions


def test_content_hash(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.tsv"
    a.write_bytes(b"alpha\n")
    b.write_bytes(b"beta\n")
    assert content_hash([a]) == hashlib.sha256(b"alpha\n").hexdigest()
    combined = hashlib.sha256(hashlib.sha256(b"alpha\n").digest() + hashlib.sha256(b"beta\n").digest()).hexdigest()
    assert content_hash([a, b]) == combined
    assert content_hash([b, a]) != content_hash([a, b])
    # Concatenation ambiguity: moving bytes between files changes the hash.
    c, d = tmp_path / "c", tmp_path / "d"
    c.write_bytes(b"alpha\nb")
    d.write_bytes(b"eta\n")
    assert content_hash([c, d]) != content_hash([a, b])


def test_check_frozen(tmp_path: Path) -> None:
    path, lock = tmp_path / "v1.jsonl", tmp_path / "frozen.lock"
    path.write_text('{"qid": "q1"}\n', encoding="utf-8")
    digest = freeze(path, "v1", lock)
    assert read_lock(lock) == {"v1": digest}
    assert check_frozen("v1", [path], digest, lock) == digest

    with pytest.raises(InputError) as info:
        check_frozen("v2", [path], None, lock)
    message = str(info.value)
    assert str(path) in message and "'v2'" in message and "not registered" in message
    assert f"rankbench freeze {path} --version v2 --lock {lock}" in message

    path.write_text('{"qid": "q1", "edited": true}\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        check_frozen("v1", [path], digest, lock)
    message = str(info.value)
    assert "'v1'" in message and "changed after it was frozen" in message and "new version" in message
    assert digest[:12] in message


def test_freeze_refuses_other_content_and_keeps_the_lock(tmp_path: Path) -> None:
    path, lock = tmp_path / "v1.jsonl", tmp_path / "frozen.lock"
    path.write_text('{"n": 1}\n', encoding="utf-8")
    first = freeze(path, "v1", lock)
    assert freeze(path, "v1", lock) == first  # same content: idempotent
    before = lock.read_bytes()
    path.write_text('{"n": 2}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"already frozen with different content.*new version name"):
        freeze(path, "v1", lock)
    assert lock.read_bytes() == before
    second = freeze(path, "v2", lock)
    assert read_lock(lock) == {"v1": first, "v2": second}
    assert list(json.loads(lock.read_text(encoding="utf-8"))) == ["v1", "v2"]


@pytest.mark.parametrize("content", ["not json", '["v1"]', '{"v1": 3}'])
def test_bad_lock_file(tmp_path: Path, content: str) -> None:
    lock = tmp_path / "frozen.lock"
    lock.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_lock(lock)
    assert str(lock) in str(info.value) and "rankbench freeze" in str(info.value)


def test_cli_freeze_return_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, lock = tmp_path / "v1.jsonl", tmp_path / "frozen.lock"
    path.write_text('{"qid": "q1"}\n', encoding="utf-8")
    assert main(["freeze", str(path), "--version", "v1", "--lock", str(lock)]) == 0
    out = capsys.readouterr().out
    assert content_hash([path]) in out and read_lock(lock) == {"v1": content_hash([path])}

    path.write_text('{"qid": "q2"}\n', encoding="utf-8")
    assert main(["freeze", str(path), "--version", "v1", "--lock", str(lock)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankbench: ") and "already frozen" in err and "Traceback" not in err

    with pytest.raises(SystemExit) as info:
        main(["freeze", str(path)])  # --version and --lock are required
    assert info.value.code == 2


def test_fixture_lock_matches_fixture_version() -> None:
    folder = Path(__file__).parents[1] / "fixtures" / "mini" / "questions"
    lock = read_lock(folder / "frozen.lock")
    assert check_frozen("v1", [folder / "v1.jsonl"], lock.get("v1"), folder / "frozen.lock") == lock["v1"]


def test_a_frozen_file_is_checked_against_its_lock_when_the_dataset_has_one(tmp_path: Path) -> None:
    path, lock = tmp_path / "expansions.jsonl", tmp_path / "frozen.lock"
    path.write_text('{"doc_id": "d1", "questions": ["q"]}\n')
    digest = freeze(path, "expansions.doc2q", lock)
    assert frozen_digest("expansions.doc2q", path, digest, lock) == hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text('{"doc_id": "d1", "questions": ["another"]}\n')
    assert frozen_digest("expansions.doc2q", path, None, None) == content_hash([path])  # no lock (BEIR): the hash
    with pytest.raises(InputError, match="changed after it was frozen"):
        frozen_digest("expansions.doc2q", path, digest, lock)
    with pytest.raises(InputError, match="is not registered"):
        frozen_digest("expansions.other", path, None, lock)
