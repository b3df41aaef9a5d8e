"""`rankbench init`, `check` and `freeze` on a project: a typo is refused by check and freeze with its file and line,
and the version name stays usable; a clean draft freezes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from document_helpers import QUESTIONS_CSV, write_documents

from rankbench.cli import main


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    write_documents(tmp_path / "docs")
    (tmp_path / "q.csv").write_text(QUESTIONS_CSV, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "proj", "--documents", "docs", "--questions", "q.csv"]) == 0
    out = capsys.readouterr().out
    assert "4 documents, 5 questions (5 labels, 1 unanswerable) as draft version v1" in out
    assert "cd proj && rankbench run" in out
    monkeypatch.chdir(tmp_path / "proj")
    return tmp_path / "proj"


def test_a_typo_is_refused_by_check_and_freeze_and_burns_no_name(proj: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    version = proj / "questions" / "v1.jsonl"
    good = version.read_text()
    version.write_text(good.replace('"section": "charging"', '"section": "chargin"'), encoding="utf-8")
    expected = ("rankbench: questions/v1.jsonl, line 2 (qid 'q2'): labels section 'chargin' of 'guide.html', which "
                "has no such section (it has: battery-guide, charging, storage)")
    assert main(["check"]) == 2
    assert capsys.readouterr().err.startswith(expected)
    assert main(["freeze", "--version", "v1"]) == 2
    assert capsys.readouterr().err.startswith(expected)
    assert json.loads((proj / "questions" / "frozen.lock").read_text()) == {}
    assert "draft: true" in (proj / "config.yaml").read_text()
    version.write_text(good.replace('"grade": 2', '"grade": 3'), encoding="utf-8")  # a draft is edited in place
    assert main(["check"]) == 0
    assert "v1: 5 questions, 5 labels: ok (draft" in capsys.readouterr().out
    assert main(["freeze", "--version", "v1"]) == 0  # the same name, now frozen
    digest = hashlib.sha256(version.read_bytes()).hexdigest()
    assert capsys.readouterr().out == (f"v1: sha256 {digest} registered in questions/frozen.lock; `draft: true` "
                                       "removed from config.yaml\n")
    assert json.loads((proj / "questions" / "frozen.lock").read_text()) == {"v1": digest}
    assert "draft" not in (proj / "config.yaml").read_text().split("qsets:")[1]
    assert main(["check"]) == 0
    assert capsys.readouterr().out == "v1: 5 questions, 5 labels: ok\n"
    version.write_text(good, encoding="utf-8")
    assert main(["check"]) == 2
    assert "changed after it was frozen" in capsys.readouterr().err


def test_check_warns_about_staff_only_evidence_with_the_line(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = proj / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace('"audience": "public"', '"audience": "staff"', 1), encoding="utf-8")
    assert main(["check", "--version", "v1"]) == 0
    assert ("rankbench: warning: questions/v1.jsonl, line 2 (qid 'q2'): public question labelled with a staff-only "
            "document (guide.html)") in capsys.readouterr().err


def test_freeze_takes_a_file_with_a_lock_or_neither(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["freeze", "questions/v1.jsonl", "--version", "v1"]) == 2
    assert "takes a version file with --lock, or neither" in capsys.readouterr().err
    assert main(["check", "--version", "v9"]) == 2
    assert "config.yaml, qsets: has no version 'v9' (it has: v1)" in capsys.readouterr().err


def test_init_refuses_a_bad_sheet_without_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    write_documents(tmp_path / "docs")
    (tmp_path / "q.csv").write_text("question,document,grade\nHow?,guide.html,high\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "proj", "--documents", "docs", "--questions", "q.csv"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankbench: q.csv, line 2: has grade 'high'") and "Traceback" not in err
    assert not (tmp_path / "proj").exists()


def test_init_reports_every_mistake_in_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Before: init stopped at the first mistake, so two mistakes took two round trips."""
    write_documents(tmp_path / "docs")
    rows = ["question,document,section,grade", "How?,guide.html,,high", "Why?,guide.html,chargin,",
            "When?,guid.html,,1", ",guide.html,,1", "Fine?,guide.html,,2"]
    rows += [f"Q{i}?,missing-{i}.md,," for i in range(25)]
    (tmp_path / "q.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "proj", "--documents", "docs", "--questions", "q.csv"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankbench: 29 mistakes, each with its file and line:\n")
    for told in ("q.csv, line 2: has grade 'high'", "q.csv, line 3: names section 'chargin'",
                 "q.csv, line 4: names document 'guid.html'", "q.csv, line 5: has no question text",
                 "q.csv, line 7: names document 'missing-0.md'", "- ... and 9 more"):
        assert told in err, told
    assert "line 6" not in err and "Traceback" not in err
    assert err.count("\n- ") == 21  # the first 20 in full, then the count
    assert not (tmp_path / "proj").exists()

    # a document that cannot be read and the sheet's own mistakes, together (labels are checked once it reads)
    (tmp_path / "docs" / "empty.md").write_text("  \n", encoding="utf-8")
    assert main(["init", "proj", "--documents", "docs", "--questions", "q.csv"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankbench: 3 mistakes") and "empty.md: holds no text" in err
    assert "line 2: has grade 'high'" in err and "line 5: has no question text" in err
    assert not (tmp_path / "proj").exists()
