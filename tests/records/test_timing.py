"""The timing record of a question-answering job: per-question seconds apart from one-time ones, calls, tokens."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rankbench.errors import InputError
from rankbench.records.timing import Timing, read_timing, timing_path


def test_each_times_every_question_alone_and_once_keeps_loading_apart(tmp_path: Path) -> None:
    timing = Timing()
    with timing.once("load"):
        time.sleep(0.05)
    answers = timing.each(["q1", "q2"], lambda i: time.sleep(0.01 * (i + 1)) or i * 10)
    assert answers == [0, 10]
    assert timing.onetime["load"] >= 0.05 and timing.questions["q1"] < 0.05
    assert 0.01 <= timing.questions["q1"] < timing.questions["q2"] and not timing.batched
    with timing.batch(["q3", "q4"]):
        time.sleep(0.02)
    assert timing.questions["q3"] == timing.questions["q4"] >= 0.01 and timing.batched
    timing.cached(["q5"])
    timing.count(3, 120)
    timing.write(tmp_path / "timing.json")
    record = read_timing(tmp_path / "timing.json")
    assert record["calls"] == 3 and record["tokens"] == 120 and record["cached"] == 1
    assert set(record["questions"]) == {"q1", "q2", "q3", "q4", "q5"} and record["questions"]["q5"] == 0.0


def test_an_unreported_token_count_makes_the_total_unknown_and_an_empty_batch_records_nothing() -> None:
    timing = Timing()
    timing.count(1, 50)
    timing.count(1, None)
    timing.count(1, 50)
    with timing.batch([]):
        pass
    assert (timing.calls, timing.tokens, timing.questions, timing.batched) == (3, None, {}, False)


def test_the_record_sits_beside_the_benchmark_and_a_broken_one_is_named(tmp_path: Path) -> None:
    assert timing_path("results/demo/benchmarks/retrieve/v1/bm25.tsv") == "results/demo/timings/retrieve/v1/bm25.json"
    broken = tmp_path / "timing.json"
    broken.write_text(json.dumps({"questions": []}))
    with pytest.raises(InputError, match=r"timing\.json.*is not a timing record"):
        read_timing(broken)
