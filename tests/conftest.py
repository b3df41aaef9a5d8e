"""Shared fixtures: one complete run of the demo workflow per test session."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from workflow_helpers import copy_dataset, snakemake

# ir_datasets fixes its cache folder (IR_DATASETS_HOME) when it is imported: the tests, and the workflows they start,
# lay out their own there and never read or fill the user's ~/.ir_datasets.
os.environ["IR_DATASETS_HOME"] = tempfile.mkdtemp(prefix="rankbench-ir-datasets-")
atexit.register(shutil.rmtree, os.environ["IR_DATASETS_HOME"], ignore_errors=True)


def run_demo(workdir: Path) -> Path:
    """Copy the demo into workdir and run the whole workflow there."""
    copy_dataset(Path("config/config.yaml"), [Path("data/demo")], workdir)
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo workflow run to completion in a temporary copy (shared: tests may add files but never change what
    the default config produces)."""
    return run_demo(tmp_path_factory.mktemp("demo"))
