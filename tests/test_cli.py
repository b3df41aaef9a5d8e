"""`rankbench eval`: TREC runs and qrels scored without Snakemake, against pytrec_eval; tidy Parquet; errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from rankbench.cli import main, parse_metrics


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
    assert other[["diff", "p_randomization", "p_holm", "p_t"]].notna().all().all()


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
        main(["eval", "--qrels", str(qrels), "--run", str(runs[0]), "--metrics", "ndcg"])  # needs @k
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 1.0 x\nq1 Q0 d1 2 0.5 x\n")
    out = tmp_path / "never.parquet"
    assert main(["eval", "--qrels", str(qrels), "--run", str(bad), "--output", str(out)]) == 1
    message = capsys.readouterr().err
    assert "bad.trec, lines 1 and 2" in message and "'q1' lists id 'd1' twice" in message
    assert not out.exists()
