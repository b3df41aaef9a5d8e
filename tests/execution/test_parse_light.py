"""Parsing the workflow stays light: no heavy library is imported to plan jobs, and importing the plotting module
leaves matplotlib's global state alone (README: Benchmarks, workflow overhead)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from workflow_helpers import REPO, copy_dataset

# Imported only by the jobs that need them: each costs from tenths of a second to seconds at every parse.
HEAVY = ("bm25s", "faiss", "scipy", "torch", "sentence_transformers", "transformers", "matplotlib", "sklearn")

# Runs Snakemake in this process, then prints which heavy modules it had loaded when it exits.
_DRY_RUN = f"""
import atexit, sys
atexit.register(lambda: print("HEAVY:", *sorted(m for m in {HEAVY!r} if m in sys.modules)))
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_dry_run_of_the_demo_imports_no_heavy_module(tmp_path: Path) -> None:
    workdir = copy_dataset(Path("config/config.yaml"), [Path("data/demo")], tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", _DRY_RUN, "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(workdir),
         "--configfile", str(workdir / "config.yaml"), "--dry-run", "--quiet", "rules"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "embed_corpus" in result.stdout  # a real plan was made
    loaded = result.stdout.rsplit("HEAVY:", 1)[1].split()
    assert loaded == []


def test_importing_plots_leaves_matplotlib_settings_alone() -> None:
    check = ("import matplotlib; before = dict(matplotlib.rcParams); import rankbench.report.plots; "
             "changed = sorted(k for k, v in matplotlib.rcParams.items() if before[k] != v); print(changed)")
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_figures_still_carry_the_house_style(tmp_path: Path) -> None:
    from rankbench.report.plots import recall_curves, save

    aggregate = pd.DataFrame({"method": ["a", "a", "b", "b"], "grain": "document", "metric": "recall", "kind": "all",
                              "k": [1, 5, 1, 5], "mean": [0.2, 0.5, 0.3, 0.6], "ci_low": [0.1, 0.4, 0.2, 0.5],
                              "ci_high": [0.3, 0.6, 0.4, 0.7], "n": 4})
    figure = recall_curves(aggregate, "document", "title")
    assert not figure.axes[0].spines["top"].get_visible()
    save(figure, tmp_path / "a.png", tmp_path / "a.svg")
    save(recall_curves(aggregate, "document", "title"), tmp_path / "b.png", tmp_path / "b.svg")
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()  # fixed hash salt
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    width = int.from_bytes((tmp_path / "a.png").read_bytes()[16:20], "big")
    assert width == round(figure.get_figwidth() * 120)  # savefig.dpi 120
