"""The serving table (records/serving.py) and the probe's runner (retrieval/serving.py): percentiles with bootstrap
CIs checked against simulation, the seeded sample, the table's columns, the footprint join, recorded latencies, and
that a shared step is timed once per question and charged to each method whose path includes it."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from rankbench.records.serving import (
    QUICK_PROBE_QUESTIONS,
    SERVING_COLUMNS,
    percentiles_with_ci,
    probe_count,
    probe_sample,
    recorded_seconds,
    serving_row,
    serving_table,
    with_footprint,
)
from rankbench.retrieval.serving import Probe, Step, probe


def test_the_columns_are_the_issue_s_schema() -> None:
    assert SERVING_COLUMNS == [
        "method", "p50_ms", "p50_ms_low", "p50_ms_high", "p95_ms", "p95_ms_low", "p95_ms_high", "p99_ms", "p99_ms_low",
        "p99_ms_high", "qps_batch", "startup_s", "ram_bytes", "disk_bytes", "dimensions", "questions_timed",
        "threads", "tokens_per_query", "requests_per_query", "usd_per_1k", "measured"]


def test_percentiles_are_numpy_s_and_in_ms() -> None:
    seconds = np.random.default_rng(1).exponential(0.02, size=57)
    found = percentiles_with_ci(seconds, seed=0)
    for p in (50, 95, 99):
        assert found[f"p{p}_ms"] == pytest.approx(1000 * np.percentile(seconds, p))
        assert found[f"p{p}_ms_low"] <= found[f"p{p}_ms"] <= found[f"p{p}_ms_high"]


def test_the_median_s_interval_covers_the_true_median_about_95_percent_of_the_time() -> None:
    """Simulation: 300 samples of 100 latencies from a lognormal whose median is known (e^μ); the percentile
    bootstrap's 95% interval of p50 should cover it in roughly 95% of them (a broken interval — a point, the wrong
    quantile, seconds for ms — covers it far less or always)."""
    rng = np.random.default_rng(7)
    mu, covered = np.log(0.03), 0
    for trial in range(300):
        seconds = rng.lognormal(mu, 0.5, size=100)
        found = percentiles_with_ci(seconds, seed=trial, resamples=500)
        covered += found["p50_ms_low"] <= 1000 * np.exp(mu) <= found["p50_ms_high"]
    assert 0.88 <= covered / 300 <= 0.99


def test_the_intervals_are_seeded() -> None:
    seconds = np.random.default_rng(3).exponential(0.01, size=40)
    assert percentiles_with_ci(seconds, seed=5) == percentiles_with_ci(seconds, seed=5)


def test_no_question_gives_nan_not_an_error() -> None:
    assert all(np.isnan(value) for value in percentiles_with_ci([], seed=0).values())


def test_the_sample_is_seeded_a_subset_and_every_question_when_fewer() -> None:
    qids = [f"q{i}" for i in range(30)]
    first = probe_sample(qids, 10, seed=0)
    assert first == probe_sample(qids, 10, seed=0) and len(set(first)) == 10 and set(first) <= set(qids)
    assert first != qids[:10]  # shuffled, not the file's order
    assert sorted(probe_sample(qids, 100, seed=0)) == sorted(qids)


@pytest.mark.parametrize("wanted, questions, quick, expected", [
    (100, 58, False, 58), (100, 500, False, 100), (5, 58, False, 5), (100, 58, True, QUICK_PROBE_QUESTIONS),
    (10, 58, True, 10), (100, 7, True, 7)])
def test_how_many_questions_are_timed(wanted: int, questions: int, quick: bool, expected: int) -> None:
    assert probe_count({"probe_questions": wanted}, questions, quick) == expected


def test_a_row_s_qps_is_its_questions_over_the_batch_seconds() -> None:
    row = serving_row("m", [0.01] * 20, 0.5, 1.5, 1, "probe", 0)
    assert row["qps_batch"] == pytest.approx(40.0) and row["questions_timed"] == 20 and row["measured"] == "probe"
    with pytest.raises(ValueError):
        serving_row("m", [0.01], 1.0, 0.0, 1, "guessed", 0)


def test_the_footprint_joins_by_method_and_a_missing_one_stays_null() -> None:
    table = serving_table([serving_row(m, [0.01, 0.02], 0.1, 1.0, 1, "probe", 0) for m in ("b", "a")])
    assert table["method"].tolist() == ["a", "b"] and table[["ram_bytes", "usd_per_1k"]].isna().all(axis=None)
    footprint = pd.DataFrame({"method": ["a"], "ram_bytes": [1000], "disk_bytes": [2000], "dimensions": [128],
                              "tokens_per_query": [12.0], "requests_per_query": [1.0], "usd_per_1k": [0.25]})
    joined = with_footprint(table, footprint)
    assert list(joined.columns) == SERVING_COLUMNS
    assert joined.loc[0, ["ram_bytes", "disk_bytes", "dimensions", "usd_per_1k"]].tolist() == [1000, 2000, 128, 0.25]
    assert joined.loc[1, ["ram_bytes", "usd_per_1k"]].isna().all()
    with pytest.raises(ValueError, match="usd_per_1k"):
        with_footprint(table, footprint.drop(columns="usd_per_1k"))


def test_recorded_latencies_sum_the_jobs_and_leave_out_a_question_one_of_them_did_not_time() -> None:
    encode = {"questions": {"q1": 0.03, "q2": 0.04}}  # q3's vector came from the cache
    search = {"questions": {"q1": 0.001, "q2": 0.002, "q3": 0.003}}
    assert recorded_seconds([encode, search], ["q3", "q2", "q1"]) == pytest.approx([0.042, 0.031])
    assert recorded_seconds([], ["q1"]) == []


def test_a_shared_step_runs_once_per_question_and_counts_in_full_for_each_method() -> None:
    calls = {"encode": 0, "a": 0, "b": 0}

    def sleeper(name: str, seconds: float) -> Step:
        def one(state: object, i: int, outputs: dict) -> str:
            calls[name] += 1
            time.sleep(seconds)
            return name

        return Step(name, lambda: None, one, lambda state, positions, outputs: [one(state, i, outputs)
                                                                                for i in positions][-1],
                    lambda i: i)

    encode, a, b = sleeper("encode", 0.004), sleeper("a", 0.001), sleeper("b", 0.006)
    timed = probe({"A": [encode, a], "B": [encode, b]}, 5)
    assert calls == {"encode": 1 + 5 + 5, "a": 11, "b": 11}  # warm-up, each question, the batch
    assert all(s >= 0.005 for s in timed["A"].seconds) and all(s >= 0.010 for s in timed["B"].seconds)
    assert timed["B"].batch_s >= 5 * 0.010 and len(timed["A"].seconds) == 5


def test_a_second_version_asking_the_same_questions_is_not_timed_again() -> None:
    """Versions share a Probe: a question whose sign a step answered already is not asked again (v3 of the demo asks
    v2's questions), one it has not is; the model is loaded once."""
    calls = {"load": 0, "one": 0, "many": 0}

    def load() -> None:
        calls["load"] += 1

    def one(state: object, i: int, outputs: dict) -> int:
        calls["one"] += 1
        return i

    def many(state: object, positions: list, outputs: dict) -> int:
        calls["many"] += 1
        return 0

    def step(signs: list[str]) -> Step:
        return Step("encode", load, one, many, lambda i: signs[i])

    shared = Probe()
    first = shared.run({"A": [step(["q1", "q2", "q3"])]}, 3)
    again = shared.run({"A": [step(["q1", "q2", "q3"])]}, 3)
    assert calls == {"load": 1, "one": 1 + 3 + 1, "many": 1}  # warm-ups, the three questions once, one batch
    assert again["A"].seconds == first["A"].seconds and again["A"].batch_s == first["A"].batch_s
    shared.run({"A": [step(["q1", "q9", "q3"])]}, 3)
    assert calls == {"load": 1, "one": 1 + 3 + 1 + 1 + 1, "many": 2}  # q9 and the new batch only


def test_the_page_names_the_machine_the_sample_and_the_adjustment() -> None:
    from rankbench.report.serving import machine_line, served_section

    machine = {"cpu": "AMD EPYC", "cores": 2, "threads": 1}
    above = machine_line({"machine": machine, "questions": 58, "asked": 100, "timed": 58, "probe": True,
                          "load": [0.4, 0.6]})
    assert above.startswith("Measured on AMD EPYC (2 cores), 1 thread used (`cost.probe_threads`); all 58 questions")
    assert "`cost.probe_questions` asks for 100: more than there are, so every question is used" in above
    assert "hold for that machine" in above and "waiting for a CPU" not in above
    quick = machine_line({"machine": machine, "questions": 58, "asked": 100, "timed": 20, "quick": True,
                          "probe": True, "load": [6.0, 9.5]})
    assert "20 of the 58 questions timed (a `--quick` run probes at most 20)" in quick
    assert "above the 2 cores, so the latencies include waiting for a CPU" in quick
    table = serving_table([serving_row("svc", [0.05, 0.06], float("nan"), 0.0, 1, "recorded", 0),
                           serving_row("bm25", [0.001, 0.002], 0.01, 0.1, 1, "probe", 0)])
    page = "\n".join(served_section(table, {"machine": machine, "questions": 2, "asked": 2, "timed": 2}))
    assert "| svc ‡ |" in page and "| bm25 |" in page and "USD" not in page  # no price table, no money column
    assert "‡ : the probe cannot run this method's path" in page
