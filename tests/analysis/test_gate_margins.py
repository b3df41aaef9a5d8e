"""The gate's --margin and --max-drop: bounded as evaluation.margin is (one place: the config schema), refused
beyond with exit 2; the verdict monotonic in them; the count of questions that would decide the same for both
options; the abstention gate's change said in words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from runs_helpers import meta_of, values_of

from rankbench.analysis.run_diff import FAIL, INCONCLUSIVE, PASS, diff_runs, gate_verdict
from rankbench.analysis.run_store import store_run, write_record
from rankbench.cli import main
from rankbench.io.loaders import SCHEMA_FOLDER, margin_bounds
from rankbench.report.run_pages import _worsening

# The real regression: nDCG@10 1.000 -> 0.105 on 12 questions, W/T/L 0/0/12.
PERFECT = np.ones(12)
BROKEN = np.linspace(0.05, 0.16, 12)


def _stored(tmp_path: Path, before: np.ndarray, after: np.ndarray) -> list[str]:
    store = tmp_path / "d" / "v1" / "runs-history"
    for stamp, values in (("20261201T090000Z", before), ("20261201T090100Z", after)):
        frame = values_of({"bm25": values})
        path = tmp_path / f"{stamp}.parquet"
        write_record(frame, meta_of(frame, note=stamp), path)
        store_run(store, path, stamp)
    return ["gate", "--results", str(tmp_path), "--method", "bm25", "--metric", "ndcg@10"]


def test_the_bounds_are_the_config_schemas() -> None:
    schema = yaml.safe_load((SCHEMA_FOLDER / "config.schema.yaml").read_text())
    margin = schema["properties"]["evaluation"]["properties"]["margin"]["additionalProperties"]
    assert margin_bounds() == (margin["minimum"], margin["maximum"]) == (0, 1)


@pytest.mark.parametrize(("option", "value"), [("--margin", "2"), ("--margin", "1e308"), ("--max-drop", "2"),
                                               ("--max-drop", "1e308"), ("--margin", "0"), ("--max-drop", "1.0001")])
def test_a_margin_beyond_the_bounds_is_refused_with_exit_2(tmp_path: Path, capsys, option: str, value: str) -> None:
    """Before: `--margin 2` and `--max-drop 2` (or 1e308) passed this regression; `--margin 1e308` printed numpy
    overflow warnings and "FAIL … p = nan"."""
    gate = _stored(tmp_path, PERFECT, BROKEN)
    with pytest.raises(SystemExit) as stop:
        main([*gate, option, value])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert f"argument {option}: must be a finite number in " in captured.err and f"got {value!r}" in captured.err
    assert "bounded as evaluation.margin is in the config" in captured.err and not captured.out
    assert "Warning" not in captured.err


def test_the_regression_fails_at_every_smaller_bound_and_the_widest_margins_are_accepted(tmp_path: Path,
                                                                                        capsys) -> None:
    gate = _stored(tmp_path, PERFECT, BROKEN)
    assert main([*gate, "--max-drop", "0.5"]) == 1
    assert main([*gate, "--margin", "0.5"]) == 1
    capsys.readouterr()
    assert main([*gate, "--max-drop", "1"]) in (0, 1, 3) and main([*gate, "--margin", "1"]) in (0, 1, 3)
    assert "p = nan" not in capsys.readouterr().out


RANK = {FAIL: 0, INCONCLUSIVE: 1, PASS: 2}


def _diff(before: np.ndarray, after: np.ndarray):
    a, b = values_of({"bm25": before}), values_of({"bm25": after})
    return diff_runs(a, b, {**meta_of(a), "run_id": "a"}, {**meta_of(b), "run_id": "b"}, n_resamples=2000)


@pytest.mark.parametrize("seed", range(12))
def test_the_verdict_never_gets_stricter_as_the_margin_grows(seed: int) -> None:
    """A property over margins: a wider --margin (or --max-drop) never turns PASS into INCONCLUSIVE or FAIL, nor
    INCONCLUSIVE into FAIL, on random changes (losses, gains, ties, a few questions or many)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    before = rng.uniform(0, 1, n)
    moved = rng.uniform(0, 1, n) < rng.uniform(0.1, 1)
    after = np.clip(before + moved * rng.normal(rng.uniform(-0.3, 0.1), rng.uniform(0.01, 0.3), n), 0, 1)
    diff = _diff(before, after)
    low, high = margin_bounds()
    margins = np.linspace(low, high, 81)
    for option in ("margin", "max_drop"):
        ranks = [RANK[gate_verdict(diff, "bm25", "ndcg", 10, 0.01 if option == "margin" else m, 0.05,
                                   m if option == "margin" and m > 0 else None).outcome]
                 for m in margins if option == "max_drop" or m > 0]
        assert ranks == sorted(ranks), (option, ranks)


# The case: 27 questions, 5 lose 0.2646 (W/T/L 0/22/5, Δ -0.049): a loss larger than δ = 0.01.
CLEAR_BEFORE = np.full(27, 0.94)
CLEAR_AFTER = CLEAR_BEFORE - np.where(np.arange(27) < 5, 0.2646, 0.0)


def test_margin_and_max_drop_give_the_same_count_of_questions_for_a_loss_beyond_them(tmp_path: Path,
                                                                                   capsys) -> None:
    """Before: `--margin 0.01` said "more questions like these would not decide it" where `--max-drop 0.01` said
    "about 53 questions would decide it"; more questions like these would show the drop, so the count is right."""
    diff = _diff(CLEAR_BEFORE, CLEAR_AFTER)
    by_margin = gate_verdict(diff, "bm25", "ndcg", 10, 0.01, 0.05, 0.01)
    by_drop = gate_verdict(diff, "bm25", "ndcg", 10, 0.01, 0.05)
    assert by_margin.outcome == by_drop.outcome == INCONCLUSIVE
    assert by_margin.needed == by_drop.needed and by_margin.needed > 27
    gate = _stored(tmp_path, CLEAR_BEFORE, CLEAR_AFTER)
    said = f"about {int(by_drop.needed)} questions like these would decide it (you have 27)"
    for options in (["--margin", "0.01"], ["--max-drop", "0.01"]):
        assert main([*gate, *options]) == 3
        out = capsys.readouterr().out
        assert said in out and "would not decide" not in out


def test_the_count_is_what_a_simulation_needs_to_show_the_drop() -> None:
    """The count for a loss beyond δ: at that many questions drawn like these, the paired t-test shows the drop at
    alpha in about 80% of simulated experiments (the budget's power)."""
    from scipy.stats import ttest_1samp

    diff = _diff(CLEAR_BEFORE, CLEAR_AFTER)
    needed = int(gate_verdict(diff, "bm25", "ndcg", 10, 0.01, 0.05, 0.01).needed)
    d = CLEAR_AFTER - CLEAR_BEFORE
    rng = np.random.default_rng(0)
    draws = d[rng.integers(0, len(d), size=(4000, needed))]
    power = float(np.mean(ttest_1samp(draws, 0.0, axis=1).pvalue < 0.05))
    assert 0.7 < power < 0.95


@pytest.mark.parametrize(("worse", "said"), [(-0.5, "better by 50.0 percentage points"),
                                             (0.05, "worse by 5.0 percentage points"), (-0.0, "no change"),
                                             (0.0, "no change"), (0.0004, "no change")])
def test_the_abstention_change_is_said_in_words(worse: float, said: str) -> None:
    """Before: catching more unanswerable questions printed "worse by −50.0%", and no change "−0.0%"."""
    assert _worsening(worse) == said and "−" not in _worsening(worse) and "-" not in _worsening(worse)


def test_the_abstention_gate_says_better_when_more_unanswerable_questions_are_caught(tmp_path: Path,
                                                                                     capsys) -> None:
    from rankbench.analysis.calibration import abstention_values

    store = tmp_path / "d" / "v1" / "runs-history"
    for stamp, caught in (("20261201T090000Z", 1), ("20261201T090100Z", 2)):
        per_question = pd.DataFrame({"method": "bm25", "qid": ["a0", "a1", "u0", "u1"],
                                     "answerable": [True, True, False, False],
                                     "zone": ["normal", "normal", *["abstain"] * caught, *["normal"] * (2 - caught)]})
        values = abstention_values(per_question)
        path = tmp_path / f"{stamp}.parquet"
        write_record(values, {**meta_of(values, note=stamp), "abstention": {"zones": {"bm25": [0.1, 0.2]}}}, path)
        store_run(store, path, stamp)
    main(["gate", "--abstention", "--method", "bm25", "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert "unanswerable caught: " in out and "50.0% → 100.0% of 2 questions in the abstain zone (better by 50.0 " \
        "percentage points" in out
    assert "answerable lost: PASS: 0.0% → 0.0% of 2 questions in the abstain zone (no change" in out
    assert "-0.0" not in out and "−" not in out


@pytest.mark.parametrize("alpha", ["1e-300", "5e-324", "1e-17"])
def test_a_tiny_alpha_gives_a_verdict_not_a_traceback(tmp_path: Path, capsys, alpha: str) -> None:
    """Before: `--alpha 1e-300` on a drop with too few changed questions ended in an OverflowError traceback (exit 1)
    while counting the questions that would decide it."""
    gate = _stored(tmp_path, CLEAR_BEFORE, CLEAR_AFTER)
    assert main([*gate, "--alpha", alpha]) == 3
    out = capsys.readouterr().out
    assert out.startswith("INCONCLUSIVE") and "questions like these would decide it" in out
