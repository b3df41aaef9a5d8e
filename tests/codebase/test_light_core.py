"""The core import path stays light: scoring, comparing and fusing runs and `rankbench eval` load neither torch,
Snakemake, FAISS, numba nor matplotlib (a plain `pip install rankbench` has none of them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.core
# Heavy, or only in an extra (markdown_it renders the workflow's pages: a core install has none).
HEAVY = ("torch", "snakemake", "faiss", "numba", "matplotlib", "sentence_transformers", "bm25s", "transformers",
         "markdown_it")

# Uses the whole core in a fresh interpreter, then prints the heavy modules it loaded.
_CORE = f"""
import sys
from pathlib import Path
import rankbench
from rankbench.cli import main
qrels = {{"q1": {{"d1": 2, "d2": 0}}, "q2": {{"d3": 1}}}}
runs = {{"a": {{"q1": {{"d1": 1.0, "d2": 0.5}}, "q2": {{"d3": 0.2}}}},
        "b": {{"q1": {{"d2": 1.0}}, "q2": {{"d3": 1.0}}}}}}
rankbench.evaluate(qrels, runs["a"], "ndcg@10")
rankbench.compare(qrels, runs, "ndcg@10,recall@10", baseline="a")
folder = Path(sys.argv[1])
rankbench.write_run(rankbench.fuse(list(runs.values())), folder / "fused.trec")
rankbench.write_qrels(rankbench.read_qrels(qrels), folder / "qrels.txt")
main(["eval", "--qrels", str(folder / "qrels.txt"), "--run", str(folder / "fused.trec")])
print("HEAVY:", *sorted(name for name in {HEAVY!r} if name in sys.modules))
"""


def test_the_core_imports_no_heavy_module(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", _CORE, str(tmp_path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ndcg" in result.stdout  # `rankbench eval` printed its table
    assert result.stdout.rsplit("HEAVY:", 1)[1].split() == []
