"""Graded abstention: zone shares and hit@k against a brute-force count, the calibration page's zone table, the
`abstention` config block and the two-way gate (`rankbench gate --abstention`) on constructed runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from runs_helpers import meta_of

from rankbench.analysis.calibration import (
    CAUGHT,
    LOST,
    abstention_values,
    question_zones,
    thresholds,
    zone_shares,
    zone_table,
)
from rankbench.analysis.run_diff import abstention_verdict, diff_runs
from rankbench.analysis.run_store import store_run, stored_runs, write_record
from rankbench.cli import main
from rankbench.configuration.config import check_methods
from rankbench.configuration.defaults import method_settings
from rankbench.errors import InputError
from rankbench.report.calibration import calibration_markdown

ZONES = {"a": [0.3, 0.6], "b": [-1.0, 2.0]}


def _random_top1(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two methods' top-1 scores (some empty results, some exactly on a threshold) and hit@k per question."""
    frames, hits = [], []
    for method in ZONES:
        scores = rng.choice([*np.round(rng.uniform(-2, 3, n), 1), 0.3, 0.6, -1.0, 2.0, np.nan], n)
        answerable = rng.uniform(size=n) < 0.6
        qids = [f"q{i}" for i in range(n)]
        frames.append(pd.DataFrame({"method": method, "qid": qids, "kind": "k", "answerable": answerable,
                                    "score": scores}))
        hits.append(pd.DataFrame({"method": method, "qid": np.array(qids)[answerable],
                                  "hit": rng.integers(0, 2, answerable.sum()).astype(float)}))
    return pd.concat(frames, ignore_index=True), pd.concat(hits, ignore_index=True)


@pytest.mark.parametrize("seed", range(5))
def test_zone_shares_and_hits_match_a_brute_force_count(seed: int) -> None:
    rng = np.random.default_rng(seed)
    top1, hits = _random_top1(rng, 57)
    table = zone_table(question_zones(top1, ZONES, hits), ZONES).set_index(["method", "zone"])
    for method, (t1, t2) in ZONES.items():
        rows = top1[top1["method"] == method]
        found = hits[hits["method"] == method].set_index("qid")["hit"]
        counts = {"abstain": [0, 0], "cautious": [0, 0], "normal": [0, 0]}
        hit_sums = {"abstain": [], "cautious": [], "normal": []}
        for qid, answerable, score in zip(rows["qid"], rows["answerable"], rows["score"]):
            zone = "abstain" if np.isnan(score) or score < t1 else "cautious" if score < t2 else "normal"
            counts[zone][0 if answerable else 1] += 1
            if answerable:
                hit_sums[zone].append(found[qid])
        total_a, total_u = int(rows["answerable"].sum()), int((~rows["answerable"]).sum())
        for zone, (a, u) in counts.items():
            row = table.loc[(method, zone)]
            assert (row["answerable"], row["unanswerable"]) == (a, u)
            assert row["answerable_share"] == pytest.approx(a / total_a)
            assert row["unanswerable_share"] == pytest.approx(u / total_u)
            assert row["hit"] == pytest.approx(np.mean(hit_sums[zone])) if hit_sums[zone] else np.isnan(row["hit"])
        shares = zone_shares(table.reset_index())[method]
        assert sum(shares[zone]["answerable"] for zone in counts) == pytest.approx(1, abs=1e-5)


def test_the_zone_threshold_agrees_with_the_calibration_sweep() -> None:
    """The abstain zone at t1 holds the answerable questions the sweep counts below t1 and catches the rest."""
    top1, hits = _random_top1(np.random.default_rng(9), 80)
    sweep = thresholds(top1[top1["method"] == "a"])
    for t1 in sweep["threshold"]:
        zones = {"a": [t1, t1 + 10]}
        row = zone_table(question_zones(top1, zones, hits), zones).set_index(["method", "zone"]).loc[("a", "abstain")]
        swept = sweep.set_index("threshold").loc[t1]
        assert row["answerable_share"] == pytest.approx(swept["answerable_below"])
        assert row["unanswerable_share"] == pytest.approx(1 - swept["unanswerable_above"])


def test_the_page_shows_the_zone_table_or_says_why_it_is_absent() -> None:
    top1, hits = _random_top1(np.random.default_rng(1), 30)
    zones = zone_table(question_zones(top1, ZONES, hits), ZONES)
    page = calibration_markdown(top1, thresholds(top1), "v1", zones, 10)
    assert "## Abstention zones" in page and "### a" in page and "hit@10 inside" in page
    assert "| abstain (< 0.3) |" in page and "| t1 = 0.3 (abstain) |" in page
    assert "nan%" not in page and "| nan" not in page
    all_answerable = top1.assign(answerable=True)
    absent = calibration_markdown(all_answerable, thresholds(all_answerable), "v1", zones, 10)
    assert "Abstention zones" not in absent
    assert "no unanswerable question" in absent and "abstention zones table (`abstention.zones`) is absent" in absent
    without_zones = calibration_markdown(all_answerable, thresholds(all_answerable), "v1")
    assert "abstention zones table (`abstention.zones`) is absent" in without_zones  # SciFact, CACM: no zones set


def test_the_abstention_block_is_checked_and_filled_in() -> None:
    spec = {"type": "bm25", "abstention": {"zones": [0.2, 0.5]}}
    assert method_settings(spec)["abstention"] == {"signal": "top1", "zones": [0.2, 0.5]}
    config = {"methods": {"m": {**spec, "abstention": {"zones": [0.5, 0.5]}}}, "chunkers": {"c": {}},
              "chunker": "c", "qsets": {}}
    with pytest.raises(InputError, match=r"methods\.m\.abstention\.zones.*t1 < t2"):
        check_methods(config, "config.yaml")
    demo = yaml.safe_load(Path("config/config.yaml").read_text())
    assert any("abstention" in method for method in demo["methods"].values())


def _record(tmp_path: Path, name: str, lost: np.ndarray, caught: np.ndarray) -> Path:
    per_question = pd.DataFrame({"method": "bm25", "qid": [f"a{i}" for i in range(len(lost))]
                                 + [f"u{i}" for i in range(len(caught))],
                                 "answerable": [True] * len(lost) + [False] * len(caught),
                                 "zone": np.where(np.concatenate([lost, caught]) > 0, "abstain", "normal")})
    values = abstention_values(per_question)
    meta = {**meta_of(values, note=name), "abstention": {"zones": {"bm25": [0.1, 0.2]}}}
    path = tmp_path / f"{name}.parquet"
    write_record(values, meta, path)
    return path


def _gate(tmp_path: Path, before: tuple, after: tuple, *extra: str) -> tuple[int, object]:
    store = tmp_path / "d" / "v1" / "runs-history"
    store_run(store, _record(tmp_path, "a", *before), "20261201T090000Z")
    store_run(store, _record(tmp_path, "b", *after), "20261201T090100Z")
    a, b = stored_runs(store)
    verdict = abstention_verdict(diff_runs(a.values(), b.values(), a.meta, b.meta), "bm25", 0.05, 0.05, 0.05)
    code = main(["gate", "--abstention", "--method", "bm25", "--results", str(tmp_path), *extra])
    assert code == verdict.exit_code
    return code, verdict


N = 60
NONE_LOST, HALF_CAUGHT = np.zeros(N), (np.arange(N) < N // 2).astype(float)


@pytest.mark.parametrize(("after", "code", "failing"), [
    ((NONE_LOST, HALF_CAUGHT), 0, None),  # unchanged
    ((NONE_LOST, (np.arange(N) < N // 2 + 5).astype(float)), 0, None),  # more caught: shown within the margin
    (((np.arange(N) < 20).astype(float), HALF_CAUGHT), 1, "answerable lost"),  # 20 answerable newly abstained
    ((NONE_LOST, (np.arange(N) < 10).astype(float)), 1, "unanswerable caught"),  # 20 unanswerable no longer caught
    (((np.arange(N) < 4).astype(float), HALF_CAUGHT), 3, None),  # 4 of 60 lost: neither shown worse nor within 0.05
])
def test_the_abstention_gate_on_constructed_runs(tmp_path: Path, capsys, after: tuple, code: int,
                                                 failing: str | None) -> None:
    got, verdict = _gate(tmp_path, (NONE_LOST, HALF_CAUGHT), after)
    assert got == code
    out = capsys.readouterr().out
    assert out.startswith({0: "PASS", 1: "FAIL", 3: "INCONCLUSIVE"}[code])
    if failing:
        assert [c.direction for c in verdict.checks if c.outcome == "fail"] == [failing]
        assert f"- {failing}: FAIL" in out


def test_without_unanswerable_questions_the_gate_cannot_tell(tmp_path: Path, capsys) -> None:
    code, verdict = _gate(tmp_path, (NONE_LOST, np.zeros(0)), (NONE_LOST, np.zeros(0)))
    assert code == 3 and verdict.checks[1].reason == "no question"
    assert "share no unanswerable question" in capsys.readouterr().out


def test_the_abstention_gate_refuses_bad_usage(tmp_path: Path, capsys) -> None:
    _gate(tmp_path, (NONE_LOST, HALF_CAUGHT), (NONE_LOST, HALF_CAUGHT))
    where = ["--results", str(tmp_path)]
    assert main(["gate", "--abstention", "--method", "dense", *where]) == 2  # no zones in the runs
    assert main(["gate", "--abstention", "--method", "bm25", "--metric", "ndcg@10", *where]) == 2
    assert main(["gate", "--method", "bm25", "--metric", "ndcg@10", "--lost-margin", "0.1", *where]) == 2
    with pytest.raises(SystemExit) as raised:
        main(["gate", "--abstention", "--method", "bm25", "--caught-margin", "nan", *where])
    assert raised.value.code == 2
    assert LOST != CAUGHT


def test_what_to_do_says_what_the_abstain_zone_catches_and_costs() -> None:
    from rankbench.report.decision import abstention_rules

    top1 = pd.DataFrame({"method": "m", "qid": [f"q{i}" for i in range(10)], "kind": "k",
                         "answerable": [True] * 6 + [False] * 4,
                         "score": [0.1, 0.5, 0.6, 0.7, 0.8, 0.9, 0.1, 0.2, 0.3, 0.7]})
    zones = {"m": [0.4, 0.65]}
    hits = pd.DataFrame({"method": "m", "qid": [f"q{i}" for i in range(6)], "hit": 1.0})
    table = zone_table(question_zones(top1, zones, hits), zones)
    line, = abstention_rules(table)
    assert "below t1 = 0.4 catches 75% of the unanswerable questions (3 of 4; 95% CI 19%–99%) at the cost of 17% " \
           "of the answerable ones (1 of 6; 95% CI 0%–64%). → Only 4 unanswerable questions and 6 answerable " \
           "questions: too few to rely on these shares" in line and "On these numbers: keep the zones" in line
    assert abstention_rules(table.assign(unanswerable_share=np.nan)) == []  # nothing to catch: no rule
    assert abstention_rules(None) == []


@pytest.mark.parametrize(("count", "n"), [(1, 2), (3, 4), (0, 5), (5, 5), (40, 60)])
def test_the_share_interval_is_the_exact_binomial_one(count: int, n: int) -> None:
    """Checked against statsmodels' Clopper-Pearson ("beta") interval."""
    from statsmodels.stats.proportion import proportion_confint

    from rankbench.report.decision import share_interval

    low, high = proportion_confint(count, n, alpha=0.05, method="beta")
    assert share_interval(count, n) == f"{low:.0%}–{high:.0%}"


def test_abstention_advice_on_two_unanswerable_questions_warns_and_many_do_not() -> None:
    """Before: "catches 50% … → keep the zones" on 2 unanswerable questions, with no word about n."""
    from rankbench.report.decision import SMALL_N, abstention_rules

    def table(unanswerable: int, answerable: int) -> pd.DataFrame:
        return pd.DataFrame({"method": "m", "zone": ["abstain", "normal"], "high": [0.3, 0.9],
                             "unanswerable": [unanswerable // 2, unanswerable - unanswerable // 2],
                             "answerable": [0, answerable], "unanswerable_share": [0.5, 0.5],
                             "answerable_share": [0.0, 1.0]})

    line, = abstention_rules(table(2, 40))
    assert "catches 50% of the unanswerable questions (1 of 2; 95% CI 1%–99%)" in line
    assert "→ Only 2 unanswerable questions: too few to rely on these shares" in line
    line, = abstention_rules(table(2 * SMALL_N, 40))
    assert "too few" not in line and "→ Keep the zones" in line
