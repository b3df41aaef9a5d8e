"""The pages on data without the demo's extras: a tiny BEIR dataset (numeric ids, empty titles; no kinds, audiences,
dates or unanswerable questions), BM25 only. Its one run is killed while recording the history, then recovered."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from workflow_helpers import REPO, SNAKEMAKE, copy_dataset, snakemake

from rankbench.analysis.headline_history import record_run
from rankbench.io.files import write_text
from rankbench.report.history import history_markdown

pytestmark = pytest.mark.slow
FIXTURE = Path("tests/fixtures/beir-tiny")
BASE = Path("results/beir-tiny")


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workflow run once, killed (-9) while its history job waits for the history lock, then recovered."""
    workdir = copy_dataset(FIXTURE / "config.yaml", [FIXTURE], tmp_path_factory.mktemp("beir"))
    (workdir / "results").mkdir()
    with open(workdir / "results/history.jsonl.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another run recording its history
        process = subprocess.Popen(SNAKEMAKE + ["-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(workdir),
                                                "--cores", "2", "--configfile", str(workdir / "config.yaml")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 600
        while not (workdir / "logs/beir-tiny/record_history.log").exists():
            assert process.poll() is None, "the workflow ended before its history job started"
            assert time.monotonic() < deadline, "the history job did not start within 10 minutes"
            time.sleep(0.05)
        time.sleep(1)
        assert process.poll() is None  # the history job waits for the lock
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not (workdir / "results/history.jsonl").exists() and not (workdir / BASE / "history.md").exists()
    assert snakemake(workdir, "--unlock").returncode == 0
    result = snakemake(workdir, "--cores", "2", "--rerun-incomplete")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def test_a_run_killed_while_recording_its_history_is_recorded_by_the_next_run(beir: Path) -> None:
    records = [json.loads(line) for line in (beir / "results/history.jsonl").read_text().splitlines()]
    assert sorted((r["qset"], r["method"], r["run"]) for r in records) == [
        ("odd", "bm25", 1), ("odd", "bm25-rm3", 1), ("test", "bm25", 1), ("test", "bm25-rm3", 1)]
    page = (beir / BASE / "history.md").read_text()
    assert len([line for line in page.splitlines() if line.startswith("| 1 |")]) == 2  # one row per version
    # Killed after appending and before drawing: the job run again appends nothing and draws the same pages.
    paths = [str(beir / BASE / f"{qset}/history-record.json") for qset in ("test", "odd")]
    assert record_run(paths, beir / "results/history.jsonl", "beir-tiny", "rr@10", "later",
                      lambda frame, metric: write_text(history_markdown(frame, metric), beir / "again.md")) == 0
    assert (beir / "again.md").read_text() == page


def test_comparison_page_says_not_applicable_instead_of_empty_tables(beir: Path) -> None:
    page = (beir / BASE / "test/comparison.md").read_text()
    assert "Not applicable (no staff-only document, no question with an `as_of`)." in page
    assert "0/12 (0.00)" not in page and "| staff-only" not in page
    assert "Not applicable: every question is of one kind (beir)" in page
    assert "### Per question kind:" not in page and "On beir questions" not in page
    breakdowns = (beir / BASE / "test/breakdowns.md").read_text()
    assert "Not applicable: every question is of one kind (beir)" in breakdowns
    assert "no question of this version has a `tags` field" in breakdowns and "### Per tag:" not in breakdowns
    assert "no question of this version has a `difficulty` field" in breakdowns
    assert "### Per difficulty:" not in breakdowns and "[breakdowns page](breakdowns.html)" in page
    assert "per-kind" not in page.split("## Findings")[1].split("##")[0]
    # One chunk per document: the chunk-grain table would repeat the document-grain one cell for cell.
    chunk_section = page.split("## All questions, chunk grain")[1].split("##")[0]
    assert "The same figures as at document grain (each document is one chunk)." in chunk_section
    assert "| bm25 |" not in chunk_section


def test_calibration_and_failures_fit_data_without_unanswerable_questions_or_titles(beir: Path) -> None:
    calibration = (beir / BASE / "test/calibration.md").read_text()
    assert "Not applicable (no unanswerable question" in calibration
    assert "abstention zones table (`abstention.zones`) is absent" in calibration  # says why, zones set or not
    assert "nan%" not in calibration and "**" not in calibration
    failures = (beir / BASE / "test/failures.md").read_text()
    assert "| kind |" not in failures and " — |" not in failures and " — ;" not in failures
    for section in failures.split("\n## ")[1:]:
        qids = [int(line.split(" | ")[0][2:]) for line in section.splitlines()
                if line.startswith("| ") and not line.startswith("| qid")]
        assert len(qids) == len(set(qids))  # each failing question once


def test_diff_of_two_beir_splits_marks_no_field_change(beir: Path) -> None:
    diff = (beir / BASE / "diffs/test-vs-odd.md").read_text()
    assert "as_of" not in diff and "- changes: 6 removed" in diff
    removed = [line.split(" | ")[0][2:] for line in diff.splitlines() if "| removed |" in line]
    assert removed == ["2", "4", "6", "8", "10", "12"]
