"""`rankbench freeze` on bad arguments: one `rankbench:` line naming what is wrong, exit 2, the lock untouched."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rankbench.cli import main
from rankbench.errors import InputError
from rankbench.io.frozen import check_frozen, read_lock


def freeze_cli(path: Path, version: str, lock: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["freeze", str(path), "--version", version, "--lock", str(lock)])
    return code, capsys.readouterr().err


@pytest.fixture
def version_file(tmp_path: Path) -> Path:
    path = tmp_path / "v1.jsonl"
    path.write_text('{"qid": "q1", "question": "x", "labels": []}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("case, expected", [
    ("missing file", ["missing.jsonl", "is not a file"]),
    ("missing lock folder", ["no-such-folder", "does not exist", "--lock"]),
    ("not JSONL", ["notes.txt, line 1", "not a valid JSON object"]),
    ("JSONL then not", ["half.jsonl, line 2", "not a valid JSON object"]),
    ("empty file", ["empty.jsonl", "holds no JSON line"]),
    ("path as version", ["version '../x y'", "not a usable version name"]),
    ("dot version", ["version '..'", "not a usable version name"]),
])
def test_bad_arguments_are_refused_without_traceback(tmp_path: Path, version_file: Path, case: str,
                                                     expected: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("just some notes\n", encoding="utf-8")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    (tmp_path / "half.jsonl").write_text('{"qid": "q1"}\nand then notes\n', encoding="utf-8")
    path, version, lock = version_file, "v1", tmp_path / "frozen.lock"
    if case == "missing file":
        path = tmp_path / "missing.jsonl"
    elif case == "missing lock folder":
        lock = tmp_path / "no-such-folder" / "frozen.lock"
    elif case == "not JSONL":
        path = tmp_path / "notes.txt"
    elif case == "JSONL then not":
        path = tmp_path / "half.jsonl"
    elif case == "empty file":
        path = tmp_path / "empty.jsonl"
    else:
        version = "../x y" if case == "path as version" else ".."
    code, err = freeze_cli(path, version, lock, capsys)
    assert code == 2 and err.startswith("rankbench: ") and "Traceback" not in err
    for fragment in expected:
        assert fragment in err, (fragment, err)
    assert not lock.exists()


@pytest.mark.parametrize("version", ["v2", "2025-06", "v1.fixed", "v1.rewrites.llm", "A_b-3"])
def test_ordinary_version_names_are_accepted(tmp_path: Path, version_file: Path, version: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert freeze_cli(version_file, version, tmp_path / "frozen.lock", capsys)[0] == 0


def test_an_uppercase_hash_in_the_lock_is_the_same_hash(tmp_path: Path, version_file: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    digest = hashlib.sha256(version_file.read_bytes()).hexdigest()
    lock = tmp_path / "frozen.lock"
    lock.write_text(json.dumps({"v1": digest.upper()}), encoding="utf-8")
    assert read_lock(lock) == {"v1": digest}
    assert check_frozen("v1", [version_file], digest.upper(), lock) == digest
    assert freeze_cli(version_file, "v1", lock, capsys)[0] == 0  # same content: accepted, not "changed"


def test_a_lock_entry_that_is_no_hash_names_the_version(tmp_path: Path) -> None:
    lock = tmp_path / "frozen.lock"
    lock.write_text(json.dumps({"v1": "0" * 64, "v2": "abc"}), encoding="utf-8")
    with pytest.raises(InputError, match=r"version 'v2': has 'abc', which is not a sha256"):
        read_lock(lock)
