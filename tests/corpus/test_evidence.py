"""Evidence spans of labels: quotes and offsets resolved against the document, hostile evidence refused by name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from document_helpers import write_documents

from rankbench.corpus.label_checks import check_label_targets
from rankbench.errors import InputError
from rankbench.io.loaders import load_corpus, load_questions
from rankbench.project.drafts import check_version, freeze_draft
from rankbench.project.project_init import init_project

TEXT = "Intro line.\n## Delays\nRefunds take ten days. Refunds take ten days.\n## Costs\nShipping is free.\n"


def version(tmp_path: Path, *labels: dict) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"doc_id": "d1", "title": "Refunds", "text": TEXT}) + "\n", encoding="utf-8")
    path = tmp_path / "v1.jsonl"
    lines = [{"qid": "q0", "question": "other?", "labels": []},
             {"qid": "q1", "question": "How long?", "labels": [{"doc_id": "d1", "grade": 1}, *labels]}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return corpus, path


def resolved(tmp_path: Path, *labels: dict):
    corpus, path = version(tmp_path, *labels)
    frame = load_questions(path)[1]
    return check_label_targets(frame, load_corpus(corpus), path)


def test_a_quote_and_offsets_resolve_to_the_same_span(tmp_path: Path) -> None:
    start = TEXT.index("Shipping is free.")
    labels = resolved(tmp_path, {"doc_id": "d1", "section": "costs", "grade": 2, "evidence": "Shipping is free."},
                      {"doc_id": "d1", "grade": 1, "evidence": [start, start + 8]},
                      {"doc_id": "d1", "grade": 1, "evidence": "Refunds take ten days.", "occurrence": 2})
    assert labels["evidence_start"].tolist()[1:] == [start, start, TEXT.rindex("Refunds take ten days.")]
    assert labels["evidence_end"].tolist()[1:] == [start + 17, start + 8, TEXT.rindex("Refunds take ten days.") + 22]
    assert labels["evidence_start"].isna().tolist() == [True, False, False, False]


@pytest.mark.parametrize("label, says", [
    ({"evidence": ""}, "has an empty evidence quote"),
    ({"evidence": "   "}, "has an empty evidence quote"),
    ({"evidence": "Refunds take 10 days."}, "quotes evidence 'Refunds take 10 days.', which does not occur"),
    ({"evidence": "Refunds take ten days."}, r"occurs 2 times in the document \(at characters 22, 45\)\. Say which "
                                             "one with `occurrence`"),
    ({"evidence": "Refunds take ten days.", "occurrence": 3}, "asks for occurrence 3 of evidence"),
    ({"evidence": [30, 20]}, r"offsets \[30, 20\), which are reversed or empty"),
    ({"evidence": [5, 5]}, r"offsets \[5, 5\), which are reversed or empty"),
    ({"evidence": [-1, 5]}, r"outside the text \(0 to 95\)"),
    ({"evidence": [80, 200]}, r"outside the text \(0 to 95\)"),
    ({"evidence": "ten days.\n## Costs\nShipping"}, "spanning more than one section"),
    ({"evidence": [3, 40]}, "spanning more than one section"),
    ({"section": "delays", "evidence": "Shipping is free."}, "labels section 'delays' but its evidence"),
    ({"evidence": [0, 5], "occurrence": 1}, "gives an occurrence with evidence offsets"),
])
def test_hostile_evidence_is_refused_naming_the_file_line_and_label(tmp_path: Path, label: dict, says: str) -> None:
    path = version(tmp_path, {"doc_id": "d1", "grade": 2, **label})[1]
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}, line 2 \(qid 'q1'\), label 2: .*{says}"):
        resolved(tmp_path, {"doc_id": "d1", "grade": 2, **label})


@pytest.mark.parametrize("label, says", [
    ({"evidence": [1, 2, 3]}, "evidence"),
    ({"evidence": 3}, "evidence"),
    ({"occurrence": 1}, "occurrence"),
    ({"evidence": "x", "occurrence": 0}, "occurrence"),
])
def test_malformed_evidence_fails_the_schema_with_the_line(tmp_path: Path, label: dict, says: str) -> None:
    _, path = version(tmp_path, {"doc_id": "d1", "grade": 2, **label})
    with pytest.raises(InputError, match=rf"line 2 \(qid 'q1'\): .*{says}"):
        load_questions(path)


def test_init_takes_an_evidence_column_and_checks_it_at_the_sheets_line(tmp_path: Path) -> None:
    documents = write_documents(tmp_path / "docs")
    sheet = tmp_path / "q.csv"
    sheet.write_text("question,document,evidence\nWhere?,shipping notes.txt,We ship to France\n", encoding="utf-8")
    init_project(tmp_path / "proj", documents, sheet)
    record = json.loads((tmp_path / "proj" / "questions" / "v1.jsonl").read_text())
    assert record["labels"] == [{"doc_id": "shipping_notes.txt", "grade": 1, "evidence": "We ship to France"}]
    assert check_version(tmp_path / "proj" / "config.yaml", "v1", tmp_path / "proj").labels == 1
    sheet.write_text("question,document,evidence\nWhere?,shipping notes.txt,We ship to Spain\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{re.escape(str(sheet))}, line 2: quotes evidence 'We ship to Spain', "
                                         "which does not occur"):
        init_project(tmp_path / "proj2", documents, sheet)
    assert not (tmp_path / "proj2").exists()


def test_freeze_refuses_a_draft_whose_evidence_is_absent_and_registers_nothing(tmp_path: Path) -> None:
    documents = write_documents(tmp_path / "docs")
    sheet = tmp_path / "q.csv"
    sheet.write_text("question,document\nWhere?,shipping notes.txt\n", encoding="utf-8")
    init_project(tmp_path / "proj", documents, sheet)
    version = tmp_path / "proj" / "questions" / "v1.jsonl"
    record = json.loads(version.read_text())
    record["labels"][0]["evidence"] = "We ship to Spain"
    version.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"v1\.jsonl, line 1 \(qid 'q1'\), label 1: quotes evidence 'We ship to "):
        freeze_draft(tmp_path / "proj" / "config.yaml", "v1", tmp_path / "proj")
    assert json.loads((tmp_path / "proj" / "questions" / "frozen.lock").read_text()) == {}
