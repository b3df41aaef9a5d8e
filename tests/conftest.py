"""Shared fixtures: one complete run of the demo workflow per test session; the tests' grouping on pytest-xdist's
workers (`make test` runs two)."""

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On pytest-xdist's workers (`-n 2 --dist loadgroup`, as `make test` runs), a file's tests stay on one worker (a
    file's module fixtures are often a workflow run: built once, not once per worker), and every test of the shared
    demo run is on one worker (the demo is run once per session)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        group = "demo" if "demo" in getattr(item, "fixturenames", ()) else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
