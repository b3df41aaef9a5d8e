"""Reliability: a killed run recovers to the same results, two clean runs agree, frozen stays frozen."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from workflow_helpers import REPO, SNAKEMAKE, copy_dataset, edit_config, snakemake

from rankbench.io.frozen import read_lock
from rankbench.report.comparison import DATE_PREFIX

pytestmark = pytest.mark.slow
DEMO_RESULTS = Path("results/demo")


def result_files(workdir: Path, suffix: str) -> list[Path]:
    return sorted(p.relative_to(workdir) for p in (workdir / DEMO_RESULTS).rglob(f"*{suffix}"))


def assert_same_results(expected: Path, actual: Path) -> None:
    """Same ranked lists (ids and ranks exact, scores to float tolerance), same metrics, same tables."""
    runs = [p for p in result_files(expected, ".parquet") if "/runs/" in str(p)]
    assert runs and runs == [p for p in result_files(actual, ".parquet") if "/runs/" in str(p)]
    for path in runs:
        a, b = pd.read_parquet(expected / path), pd.read_parquet(actual / path)
        pd.testing.assert_frame_equal(a.drop(columns="score"), b.drop(columns="score"), obj=str(path))
        np.testing.assert_allclose(a["score"], b["score"], rtol=1e-5, atol=1e-6, err_msg=str(path))
    for path in [p for p in result_files(expected, ".parquet") if "/metrics/" in str(p) or "aggregate" in p.name]:
        pd.testing.assert_frame_equal(pd.read_parquet(expected / path), pd.read_parquet(actual / path),
                                      obj=str(path))
    # Tables, pages, figures: byte-identical apart from the comparison page's date line. Left out by design: the
    # run history (it records when each run happened), what changed since the last run (it depends on the runs
    # the results folder saw before), the cost page and its frontier plot (wall-clock timings of this run).
    left_out = ("history", "cost.", "frontier.", "since-last-run")
    tables = [p for suffix in (".md", ".tex", ".csv", ".svg", ".html") for p in result_files(expected, suffix)
              if not p.name.startswith(left_out)]
    assert tables == [p for suffix in (".md", ".tex", ".csv", ".svg", ".html") for p in result_files(actual, suffix)
                      if not p.name.startswith(left_out)]
    for path in tables:
        assert without_date((expected / path).read_bytes()) == without_date((actual / path).read_bytes()), path


def without_date(content: bytes) -> bytes:
    """The file without the comparison page's `- date: ` line (Markdown, and the same line rendered in HTML) and
    without its last section, "Since the last run"."""
    content = re.split(rb"\n(?:## |<h2>)Since the last run", content)[0]
    return b"\n".join(line for line in content.split(b"\n")
                      if not line.startswith(DATE_PREFIX.encode()) and not line.startswith(b"<li>date: "))


def test_a_run_killed_during_a_heavy_job_recovers_to_the_same_results(demo: Path, tmp_path: Path) -> None:
    """A second run from scratch in a fresh folder, killed mid-way and recovered, gives the demo fixture's results
    byte for byte: this is also the two-clean-runs determinism check (one demo run less in CI)."""
    workdir = copy_dataset(Path("config/config.yaml"), [Path("data/demo")], tmp_path)
    command = SNAKEMAKE + ["-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(workdir), "--cores", "2",
                           "--configfile", str(workdir / "config.yaml")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    heavy_logs = [workdir / "logs/demo/embed_corpus", workdir / "logs/demo/retrieve"]
    deadline = time.monotonic() + 300
    while not any(folder.exists() and any(folder.rglob("*.log")) for folder in heavy_logs):
        assert process.poll() is None, "the workflow ended before a heavy job started"
        assert time.monotonic() < deadline, "no embedding or retrieval job started within 5 minutes"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    # Whatever the kill left is either complete or absent: every Parquet file present reads.
    for path in result_files(workdir, ".parquet"):
        pd.read_parquet(workdir / path)
    # Snakemake's own recovery, as docs/getting-started.md documents: release the dead run's lock, redo incomplete jobs.
    assert snakemake(workdir, "--unlock").returncode == 0
    result = snakemake(workdir, "--cores", "2", "--rerun-incomplete")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_results(demo, workdir)


def test_results_are_never_recomputed_from_other_content_under_the_same_version(tmp_path: Path) -> None:
    workdir = copy_dataset(Path("tests/fixtures/mini/config.yaml"), [Path("tests/fixtures/mini")], tmp_path)
    config = edit_config(workdir, lambda c: c.update(methods={"bm25": {"type": "bm25"}}), "bm25.yaml")
    assert snakemake(workdir, "--cores", "1", configfile=config).returncode == 0
    questions = workdir / "tests/fixtures/mini/questions/v1.jsonl"
    lock = workdir / "tests/fixtures/mini/questions/frozen.lock"
    # Someone changes a label and edits the lock by hand to match, keeping the version name.
    questions.write_text(questions.read_text().replace('"grade": 1', '"grade": 2'))
    from rankbench.io.frozen import content_hash

    lock.write_text(lock.read_text().replace(read_lock(lock)["v1"], content_hash([questions])))
    before = pd.read_parquet(workdir / "results/mini/v1/labels.parquet")
    result = snakemake(workdir, "--cores", "1", configfile=config)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "results were made from content sha256" in output and "new version" in output
    assert (workdir / "results/mini/v1/labels.parquet").exists() is False or pd.read_parquet(
        workdir / "results/mini/v1/labels.parquet").equals(before)


@pytest.mark.parametrize("value", ["../outside", "results/../../outside"])
def test_results_cannot_escape_the_project(tmp_path: Path, value: str) -> None:
    workdir = copy_dataset(Path("tests/fixtures/mini/config.yaml"), [Path("tests/fixtures/mini")], tmp_path)
    name = edit_config(workdir, lambda c: c.update(results=value), "escape.yaml")
    result = snakemake(workdir, "--dry-run", configfile=name)
    assert result.returncode != 0
    assert f"{value!r} leads outside the project" in result.stdout + result.stderr


def test_no_rule_passes_config_values_to_a_shell() -> None:
    rules = "".join(path.read_text() for path in (REPO / "workflow/rules").rglob("*.smk"))
    assert not re.search(r"^\s+(shell|run):", rules, flags=re.MULTILINE)


def test_yaml_tags_in_a_config_cannot_run_code(tmp_path: Path) -> None:
    workdir = copy_dataset(Path("tests/fixtures/mini/config.yaml"), [Path("tests/fixtures/mini")], tmp_path)
    marker = tmp_path / "pwned"
    evil = f'evil: !!python/object/apply:os.system ["touch {marker}"]\n'
    (workdir / "evil.yaml").write_text(evil + (workdir / "config.yaml").read_text())
    result = snakemake(workdir, "--dry-run", configfile="evil.yaml")
    assert result.returncode != 0
    assert not marker.exists()
