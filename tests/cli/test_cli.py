"""`rankbench eval`: TREC runs and qrels scored without Snakemake, against pytrec_eval; tidy Parquet; errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from rankbench.cli import main
from rankbench.evaluation.metric_names import METRIC_ALIASES, MetricNameError, parse_metrics
from rankbench.evaluation.metrics import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
)

pytestmark = pytest.mark.core  # also run from the wheel on Python 3.10-3.13 (scripts/check-wheel.sh)


def write_case(tmp_path: Path) -> tuple[Path, list[Path]]:
    rng = np.random.default_rng(5)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{d} {rng.integers(0, 4)}\n" for q in range(30)
                             for d in rng.choice(40, 6, replace=False)) + "q99 0 d1 0\n")  # q99: nothing relevant
    runs = []
    for name in ("base", "other"):
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"q{q} Q0 d{d} {r} {float(rng.integers(0, 5))} {name}\n" for q in range(28)
                                for r, d in enumerate(rng.choice(40, 15, replace=False), 1)))
        runs.append(path)
    return qrels, runs


def test_eval_prints_and_writes_means_equal_to_pytrec_eval(tmp_path: Path, capsys) -> None:
    qrels, runs = write_case(tmp_path)
    out = tmp_path / "summary.parquet"
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--run", str(runs[1]),
                 "--metrics", "ndcg@10,P@5,Rprec", "--resamples", "500", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "baseline: base" in printed and "1 question(s) without a relevant label excluded" in printed
    assert "d_z [95% CI]" in printed  # the standardized effect beside every difference
    summary = pd.read_parquet(out)
    with open(qrels) as handle:
        trec_qrels = pytrec_eval.parse_qrel(handle)
    relevant = [q for q, labels in trec_qrels.items() if max(labels.values()) >= 1]
    for run in runs:
        with open(run) as handle:
            ref = pytrec_eval.RelevanceEvaluator(trec_qrels, {"ndcg_cut_10", "P_5", "Rprec"}).evaluate(
                pytrec_eval.parse_run(handle))
        for measure, (metric, k) in {"ndcg_cut_10": ("ndcg", 10), "P_5": ("precision", 5),
                                     "Rprec": ("r_precision", 0)}.items():
            # Our mean: over questions with a relevant label; missing from the run = 0 (trec_eval -c).
            expected = np.mean([ref.get(q, {}).get(measure, 0.0) for q in relevant])
            row = summary[(summary["method"] == run.stem) & (summary["metric"] == metric) & (summary["k"] == k)]
            assert row["mean"].item() == pytest.approx(expected, abs=1e-12)
            assert row["n"].item() == len(relevant) and row["n_excluded"].item() == 1
            assert f"{row['mean'].item():.4f}" in printed
    other = summary[summary["method"] == "other"]
    assert other[["diff", "d_z", "d_z_low", "d_z_high", "p_randomization", "p_holm", "p_t"]].notna().all().all()


def test_eval_prints_a_p_at_the_resampling_floor_as_a_bound(tmp_path: Path, capsys) -> None:
    """30 questions all better: no sign flip of 100 is as extreme, p = 1/101 is a bound, not a measured 0.0099."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d1 1\n" for q in range(30)))
    runs = []
    for name, rank in (("base", 5), ("better", 1)):
        runs.append(tmp_path / f"{name}.trec")
        runs[-1].write_text("".join(f"q{q} Q0 d{d} {r} {10 - r} {name}\n" for q in range(30)
                                    for r, d in enumerate([9, 8, 7, 6, 5][:rank - 1] + [1], 1)))
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--run", str(runs[1]), "--metrics", "rr@10",
                 "--resamples", "100"]) == 0
    printed = capsys.readouterr().out
    assert "≤ 0.0100" in printed and "0.0099" not in printed


def test_eval_per_query(tmp_path: Path, capsys) -> None:
    qrels, runs = write_case(tmp_path)
    out = tmp_path / "per_query.parquet"
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--metrics", "hit@1", "--per-query",
                 "--output", str(out)]) == 0
    table = pd.read_parquet(out)
    assert list(table.columns) == ["method", "qid", "metric", "k", "value"] and len(table) == 30
    assert "q0" in capsys.readouterr().out


def test_metric_names_and_errors(tmp_path: Path, capsys) -> None:
    assert parse_metrics("nDCG@10, P@5,map@100,MRR@10,success@1,Rprec,mean_grade@3") == [
        ("ndcg", 10), ("precision", 5), ("ap", 100), ("rr", 10), ("hit", 1), ("r_precision", 0), ("mean_grade", 3)]
    qrels, runs = write_case(tmp_path)
    with pytest.raises(SystemExit):
        main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--metrics", "P"])  # needs a cutoff
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 1.0 x\nq1 Q0 d1 2 0.5 x\n")
    out = tmp_path / "never.parquet"
    assert main(["eval", "--qrels", str(qrels), "--run", str(bad), "--output", str(out)]) == 2
    message = capsys.readouterr().err
    assert "bad.trec, lines 1 and 2" in message and "'q1' lists id 'd1' twice" in message
    assert not out.exists()


# trec_eval's own names (as printed, and as given to -m) -> pytrec_eval measure, with our (metric, k).
TREC_NAMES = {"map": ("map", ("ap", 0)), "recip_rank": ("recip_rank", ("rr", 0)), "ndcg": ("ndcg", ("ndcg", 0)),
              "P_5": ("P_5", ("precision", 5)), "ndcg_cut_10": ("ndcg_cut_10", ("ndcg", 10)),
              "map_cut_100": ("map_cut_100", ("ap", 100)), "Rprec": ("Rprec", ("r_precision", 0)),
              "recall_100": ("recall_100", ("recall", 100)), "success_1": ("success_1", ("hit", 1)),
              "ndcg_cut.3": ("ndcg_cut_3", ("ndcg", 3)), "map_cut_5": ("map_cut_5", ("ap", 5))}


def test_trec_eval_names_are_accepted_and_equal_pytrec_eval(tmp_path: Path) -> None:
    """docs/reference/eval-cli.md promises trec_eval's names; uncut map, recip_rank and ndcg are over the whole run
    (15 results here, so map differs from map_cut_5 and the check can fail)."""
    assert parse_metrics(",".join(TREC_NAMES)) == [ours for _, ours in TREC_NAMES.values()]
    qrels, runs = write_case(tmp_path)
    out = tmp_path / "summary.parquet"
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--metrics", ",".join(TREC_NAMES),
                 "--resamples", "50", "--per-query", "--output", str(out)]) == 0
    ours = pd.read_parquet(out)
    with open(qrels) as handle:
        trec_qrels = pytrec_eval.parse_qrel(handle)
    with open(runs[0]) as handle:
        measures = {"map", "recip_rank", "ndcg", "P_5", "ndcg_cut_10", "map_cut_100", "Rprec", "recall_100",
                    "success_1", "ndcg_cut_3", "map_cut_5"}
        ref = pytrec_eval.RelevanceEvaluator(trec_qrels, measures).evaluate(pytrec_eval.parse_run(handle))
    compared = 0
    for measure, (metric, k) in TREC_NAMES.values():
        rows = ours[(ours["metric"] == metric) & (ours["k"] == k)]
        assert len(rows) == 30, measure
        for q, value in zip(rows["qid"], rows["value"]):
            assert value == pytest.approx(ref.get(q, {}).get(measure, 0.0), abs=1e-12), (measure, q)
            compared += 1
    assert compared == 30 * len(TREC_NAMES)
    uncut, cut = ours[(ours["metric"] == "ap") & (ours["k"] == 0)], ours[(ours["metric"] == "ap") & (ours["k"] == 5)]
    assert not np.allclose(uncut["value"].to_numpy(), cut["value"].to_numpy())


def test_parity_metrics_by_trec_eval_names_equal_pytrec_eval(tmp_path: Path, capsys) -> None:
    """bpref and infAP by trec_eval's names, ERR@k, RBP with --rbp-p and condensed nDCG are scored and printed; the
    means of bpref and infAP equal pytrec_eval's."""
    assert parse_metrics("bpref,infAP,ERR@10,RBP,rbp_residual,ndcg_condensed@5") == [
        ("bpref", 0), ("infap", 0), ("err", 10), ("rbp", 0), ("rbp_residual", 0), ("ndcg_condensed", 5)]
    qrels, runs = write_case(tmp_path)
    out = tmp_path / "summary.parquet"
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--metrics", "bpref,infAP,ERR@10,RBP",
                 "--rbp-p", "0.5", "--resamples", "200", "--output", str(out)]) == 0
    summary = pd.read_parquet(out).set_index(["metric", "k"])
    assert {"bpref", "infap", "err@10", "rbp"} <= set(capsys.readouterr().out.split())
    with open(qrels) as handle:
        trec_qrels = pytrec_eval.parse_qrel(handle)
    with open(runs[0]) as handle:
        ref = pytrec_eval.RelevanceEvaluator(trec_qrels, {"bpref", "infAP"}).evaluate(pytrec_eval.parse_run(handle))
    relevant = [q for q, labels in trec_qrels.items() if max(labels.values()) >= 1]
    for measure, metric in (("bpref", "bpref"), ("infAP", "infap")):
        expected = np.mean([ref.get(q, {}).get(measure, 0.0) for q in relevant])
        assert summary.loc[(metric, 0), "mean"] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(SystemExit):
        main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--metrics", "rbp", "--rbp-p", "1"])
    qrels.write_text(qrels.read_text() + "q0 0 d99 5\n")
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--metrics", "err@10"]) == 2
    assert "ERR takes grades up to 4" in capsys.readouterr().err


def test_an_unknown_metric_error_lists_everything_accepted() -> None:
    with pytest.raises(MetricNameError) as error:
        parse_metrics("ndcg@10,bogus")
    message = str(error.value)
    assert "'bogus'" in message
    for name in (METRICS_AT_K + POLLUTION_METRICS + METRICS_FULL + EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL
                 + tuple(METRIC_ALIASES)):
        assert name in message, name
    for alias, metric in METRIC_ALIASES.items():  # every advertised alias is accepted
        assert parse_metrics(f"{alias}@5" if alias not in ("rprec", "r-precision") else alias)[0][0] == metric


def test_identical_runs_never_print_negative_zero(tmp_path: Path, capsys) -> None:
    qrels, runs = write_case(tmp_path)
    twin = tmp_path / "twin.trec"
    twin.write_text(runs[0].read_text())
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--run", str(twin), "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert "+0.0000 [+0.0000, +0.0000]" in printed and "-0.0" not in printed


@pytest.mark.parametrize("option, value", [("--resamples", "0"), ("--resamples", "-3"), ("--seed", "-1"),
                                           ("--relevance-threshold", "0")])
def test_bad_numeric_options_are_refused_by_name(tmp_path: Path, capsys, option: str, value: str) -> None:
    qrels, runs = write_case(tmp_path)
    with pytest.raises(SystemExit) as exit_code:
        main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), option, value])
    assert exit_code.value.code == 2
    assert f"argument {option}: must be a whole number" in capsys.readouterr().err


@pytest.mark.parametrize("content, fragment", [("", "holds no judgement"), ("\n\n", "holds no judgement"),
                                               ("q1 0 d1 0\nq2 0 d2 0\n", "has no label with grade >= 1")])
def test_qrels_that_evaluate_nothing_are_a_clear_error(tmp_path: Path, capsys, content: str, fragment: str) -> None:
    _, runs = write_case(tmp_path)
    qrels = tmp_path / "nothing.qrels"
    qrels.write_text(content)
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0])]) == 2
    message = capsys.readouterr().err
    assert "nothing.qrels" in message and fragment in message and "Traceback" not in message


def test_a_run_that_matches_no_label_is_warned_about_or_refused(tmp_path: Path, capsys) -> None:
    """Chunk ids (as a workflow's chunk-grain export holds) against document qrels, and an empty run, score 0
    whatever their order: say so, and fail with --strict."""
    qrels, runs = write_case(tmp_path)
    chunky = tmp_path / "chunky.trec"
    chunky.write_text("".join(f"{q} Q0 {d}#_intro {r} {score} chunky\n"
                              for q, _, d, r, score, _ in map(str.split, runs[0].read_text().splitlines())))
    empty = tmp_path / "empty.trec"
    empty.write_text("")
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--run", str(chunky), "--run", str(empty),
                 "--resamples", "50"]) == 0
    warnings = capsys.readouterr().err
    assert "warning: run chunky" in warnings and "none of its" in warnings and "#_intro" in warnings
    assert "docs.trec" in warnings and "warning: run empty" in warnings and "holds no result" in warnings
    assert "warning: run base" not in warnings
    out = tmp_path / "never.parquet"
    assert main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--run", str(chunky), "--strict",
                 "--output", str(out)]) == 2
    assert "chunky.trec" in capsys.readouterr().err and not out.exists()
    foreign = tmp_path / "foreign.trec"
    foreign.write_text("x1 Q0 d1 1 1.0 f\n")
    assert main(["eval", "--qrels", str(qrels), "--run", str(foreign), "--strict"]) == 2
    assert "question id" in capsys.readouterr().err
