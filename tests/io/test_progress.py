"""Progress lines in a job's log: one at each tenth of the work with done/total, rate and ETA."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from rankbench.io.progress import Progress, blocks, tracked
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.analyzer import Analyzer
from rankbench.retrieval.bm25 import BM25Params, build_index


def test_a_line_at_each_tenth_with_rate_and_eta(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    caplog.set_level(logging.INFO)
    with Progress(50, "embed", "texts", clock=lambda: now[0]) as progress:
        for _ in range(25):
            now[0] += 1
            progress.update(2)  # 2 texts a second
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 10  # 5, 10, ... 50 texts: every tenth once
    assert lines[0] == "embed: 6/50 texts (12%), 2.0 texts/s, elapsed 0:00:03, ETA 0:00:22"
    assert lines[-1] == "embed: 50/50 texts (100%), 2.0 texts/s, elapsed 0:00:25, ETA 0:00:00"


def test_a_slow_tenth_still_logs_every_ten_seconds(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 42: a long embedding must not stay silent between tenths (a batch every 4 s, a tenth every 40 s)."""
    now = [0.0]
    caplog.set_level(logging.INFO)
    with Progress(1000, "embed", "texts", clock=lambda: now[0]) as progress:
        for _ in range(10):
            now[0] += 4
            progress.update(10)  # 2.5 texts a second
    lines = [record.getMessage() for record in caplog.records]
    assert [line.split(" (")[0] for line in lines] == ["embed: 30/1,000 texts", "embed: 60/1,000 texts",
                                                       "embed: 90/1,000 texts", "embed: 100/1,000 texts"]
    # at 12, 24 and 36 s, then the first tenth at 40 s
    assert lines[0].endswith("2.5 texts/s, elapsed 0:00:12, ETA 0:06:28")


def test_one_big_step_logs_once_and_tracked_counts_items(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with Progress(1000, "index", "passages") as progress:
        progress.update(1000)
    assert list(tracked("abc", 3, "LLM", "calls")) == ["a", "b", "c"]
    lines = [record.getMessage() for record in caplog.records]
    assert [line.split(", ")[0] for line in lines] == ["index: 1,000/1,000 passages (100%)", "LLM: 1/3 calls (33%)",
                                                       "LLM: 2/3 calls (67%)", "LLM: 3/3 calls (100%)"]


def test_blocks_are_tenths_in_whole_batches() -> None:
    assert [len(part) for part in blocks(95, 4)] == [12] * 7 + [11]
    assert [len(part) for part in blocks(5)] == [1] * 5
    assert blocks(0) == []


def test_a_jobs_log_file_gets_the_progress_lines(tmp_path: Path) -> None:
    """run_script sends logging to the rule's log file: BM25 indexing writes its progress there."""
    log = tmp_path / "bm25_index.log"
    texts = [f"passage number {i} about bikes" for i in range(40)]
    job = SimpleNamespace(log=[log], threads=1)
    run_script(lambda _: build_index(texts, Analyzer(language="english"), BM25Params()), job)
    lines = [line for line in log.read_text().splitlines() if "BM25: analyze 40 passages" in line]
    assert len(lines) == 10
    assert "BM25: analyze 40 passages: 4/40 passages (10%)" in lines[0] and "ETA" in lines[0]
    assert "40/40 passages (100%)" in lines[-1]
