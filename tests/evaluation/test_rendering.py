"""Evaluation and Comparison render for notebooks and papers with the CIs and the workflow tables' marks."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rankbench


@pytest.fixture(scope="module")
def runs() -> tuple[dict, dict]:
    """30 questions, one relevant document each: `good<x>` finds it first, `base_line` at rank 5 or not at all."""
    rng = np.random.default_rng(0)
    qrels = {f"q{i}": {"rel": 1, "other": 0} for i in range(30)}
    good = {q: {"rel": 2.0, "other": 1.0} for q in qrels}
    base = {q: ({f"x{j}": 5.0 - j for j in range(4)} | {"rel": 0.5}) if rng.random() < 0.5 else {"other": 1.0}
            for q in qrels}
    return qrels, {"base_line": base, "good<x>": good}


def test_comparison_renders_cis_marks_and_escapes(runs: tuple[dict, dict]) -> None:
    qrels, named = runs
    result = rankbench.compare(qrels, named, ["ndcg@10", "P_5"], baseline="base_line", n_resamples=500)
    frame = result.to_frame()
    better = frame[frame["method"] == "good<x>"]
    assert (better["significant"] == "↑").all() and better["best"].all()
    text = result.to_markdown()
    row = next(line for line in text.splitlines() if line.startswith("| good<x> |"))
    summary = result.summary[(result.summary["method"] == "good<x>") & (result.summary["metric"] == "ndcg")].iloc[0]
    assert f"**{summary['mean']:.3f}** [{summary['ci_low']:.3f}, {summary['ci_high']:.3f}]↑" in row
    assert "better / worse than the baseline `base_line`" in text
    latex = result.to_latex(caption="Demo")
    assert r"base\_line &" in latex and r"\textbf{1.000}" in latex and r"$^{\uparrow}$" in latex
    assert r"\caption{Demo}" in latex and latex.count(r"\\") == 3  # heading and two methods
    page = result._repr_html_()
    assert "good&lt;x&gt;" in page and "good<x>" not in page and "<b>1.000</b>" in page


def test_evaluation_renders_mean_ci_and_n(runs: tuple[dict, dict]) -> None:
    qrels, named = runs
    result = rankbench.evaluate(qrels, named["base_line"], ["ndcg@10", "P_5"])
    frame = result.to_frame()
    assert list(frame.index) == ["ndcg@10", "P_5"] and (frame["n"] == 30).all()
    assert (frame["ci_low"] < frame["mean"]).all() and (frame["mean"] < frame["ci_high"]).all()
    assert frame["mean"].to_numpy() == pytest.approx(result.means.to_numpy(), abs=1e-15)
    assert re.search(r"\| P_5 \| 0\.\d{3} \[0\.\d{3}, 0\.\d{3}\] \| 30 \|", result.to_markdown())
    assert r"P\_5 &" in result.to_latex() and "<td>30</td>" in result._repr_html_()
