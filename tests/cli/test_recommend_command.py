"""`rankbench recommend`: prints a version's box and fragment; exit 0 every axis decided, 3 some undecided, 2 none
written (a clear message, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankbench.cli import main


def _version(results: Path, version: str, undecided: list[str]) -> None:
    folder = results / "demo" / version
    folder.mkdir(parents=True)
    (folder / "recommended.json").write_text(json.dumps({"method": "bm25", "axes": {}, "undecided": undecided}))
    (folder / "recommended.md").write_text(f"Keep **bm25** ({version})\n")
    (folder / "recommended.yaml").write_text("methods:\n  bm25:\n    type: bm25\n")


def test_exit_status_follows_the_undecided_axes_and_the_newest_version_is_the_default(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _version(tmp_path, "v9", [])
    _version(tmp_path, "v10", ["chunker (bm25)"])
    assert main(["recommend", "--results", str(tmp_path)]) == 3  # v10 after v9
    out = capsys.readouterr().out
    assert "Keep **bm25** (v10)" in out and "type: bm25" in out and "Undecided: chunker (bm25)" in out
    assert main(["recommend", "--results", str(tmp_path), "--version", "v9"]) == 0


def test_a_version_without_a_recommendation_is_a_usage_error(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _version(tmp_path, "v1", [])
    assert main(["recommend", "--results", str(tmp_path), "--version", "v2"]) == 2
    err = capsys.readouterr().err
    assert "v2" in err and "Run the workflow first" in err and "v1" in err
    assert main(["recommend", "--results", str(tmp_path / "none")]) == 2
