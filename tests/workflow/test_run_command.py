"""A whole project run from a folder outside the repository: `rankbench run --quick` there runs the packaged
workflow on that folder's config.yaml, reads a dataset kept elsewhere through relative paths, and writes its
results inside the folder only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_helpers import REPO, broken_links

BEIR_TINY = REPO / "tests" / "fixtures" / "beir-tiny"


@pytest.mark.slow
def test_a_project_outside_the_repository_runs_quick(tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    project.mkdir()
    config = yaml.safe_load((BEIR_TINY / "config.yaml").read_text())
    config["dataset"]["path"] = os.path.relpath(BEIR_TINY, project)  # ../../.../tests/fixtures/beir-tiny
    config["qsets"] = {"test": config["qsets"]["test"]}
    config["methods"] = {"bm25": config["methods"]["bm25"]}
    config.pop("diffs")
    (project / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    fixture_files = sorted(BEIR_TINY.rglob("*"))
    result = subprocess.run([sys.executable, "-m", "rankbench.cli", "run", "--quick", "--cores", "2"], cwd=project,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    version = project / "results" / "beir-tiny" / "test"
    page = (version / "comparison.md").read_text()
    assert "quick run (`rankbench run --quick`)" in page and "| bm25 |" in page.replace("`", "")
    assert not (version / "explorer.html").exists() and not (version / "budget.html").exists()
    # every link of the quick run's pages leads to a file; the pages it lacks are said to be absent, with the command
    assert broken_links(project / "results") == []
    index = (project / "results" / "beir-tiny" / "index.html").read_text()
    assert "This quick run (<code>rankbench run --quick</code>)" in index and "without <code>--quick</code>" in index
    assert "are absent from a quick run" in page and "budget.html" not in page and "cost.html" not in page
    assert sorted(BEIR_TINY.rglob("*")) == fixture_files  # nothing written beside the dataset


@pytest.mark.slow
def test_the_module_way_plans_every_rule_under_a_prefix(tmp_path: Path) -> None:
    """docs/getting-started.md's Snakefile: the packaged workflow as a Snakemake module, config from `configfile:`."""
    config = yaml.safe_load((BEIR_TINY / "config.yaml").read_text())
    config["dataset"]["path"] = os.path.relpath(BEIR_TINY, tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    page = (REPO / "docs" / "getting-started.md").read_text()
    section = page.split("## The workflow in your own Snakefile")[1]
    (tmp_path / "Snakefile").write_text(section.split("```python\n", 1)[1].split("```", 1)[0])
    result = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--quiet", "rules", "--cores", "1"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rankbench_comparison_table" in result.stdout and "rankbench_retrieve_bm25" in result.stdout
