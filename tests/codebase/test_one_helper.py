"""No second copy of a helper: trec_eval's tie order, the atomic rename and the JSONL line are each written once, in
io/, and every other module calls it (a copy drifts: one had a fixed temporary name, one skipped a check)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "src" / "rankbench").rglob("*.py"), *(ROOT / "workflow" / "scripts").glob("*.py")])
HELPERS = {
    "trec_eval's tie order (score desc, then id desc)": (r"ascending=\[True, False, False\]", "io/ranked_lists.py"),
    "an atomic rename of a temporary file": (r"os\.replace\(|\.tmp\b[\"']", "io/files.py"),
    "JSONL written by hand": (r"json\.dumps\(.*\+\s*[\"']\\n[\"']\s*for\b|\[json\.dumps\(.*\bfor\b", "io/files.py"),
}


@pytest.mark.parametrize("what", sorted(HELPERS))
def test_a_helper_is_written_once(what: str) -> None:
    pattern, home = HELPERS[what]
    copies = [f"{path.relative_to(ROOT)}:{number}" for path in SOURCES
              for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
              if re.search(pattern, line) and not path.as_posix().endswith(home)]
    assert not copies, f"{what} outside {home} (call the helper there): {copies}"


def test_the_scan_finds_a_copy() -> None:
    assert re.search(HELPERS["JSONL written by hand"][0], 'text = "".join(json.dumps(r) + "\\n" for r in rows)')
    assert re.search(HELPERS["JSONL written by hand"][0], 'lines = [json.dumps(r, sort_keys=True) for r in rows]')
    assert not re.search(HELPERS["JSONL written by hand"][0], 'write_text(json.dumps(lock, indent=2) + "\\n", path)')
    assert re.search(HELPERS["an atomic rename of a temporary file"][0], 'tmp = path.with_name(".x.tmp")')


def _defined_twice(source: str) -> list[str]:
    """Top-level functions and classes a module defines more than once (the last definition wins silently)."""
    names = [node.name for node in ast.parse(source).body
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    return sorted({name for name in names if names.count(name) > 1})


def test_no_module_defines_a_name_twice() -> None:
    """Two branches merged each added a `_change` to report/run_pages.py: the second replaced the first, and every
    run after a config change failed in record_run (ruff's F811 misses it when the first is used before)."""
    twice = {str(path.relative_to(ROOT)): names for path in SOURCES
             if (names := _defined_twice(path.read_text(encoding="utf-8")))}
    assert not twice, f"defined twice, the second replacing the first: {twice}"
    assert _defined_twice("def f(): pass\ndef g(): f()\ndef f(x): pass\n") == ["f"]
