"""The quality-cost frontier: the Pareto set on a known answer, the prompt size at k, the cheapest method shown as
good as the best, and a plot whose bytes depend only on its inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rankbench.analysis.frontier import cheapest_as_good, frontier, pareto, prompt_characters
from rankbench.evaluation.scoring import summarize
from rankbench.report.plots import frontier_plot, save


def test_pareto_set_on_a_known_answer() -> None:
    # a: best and slowest; b: worst of the three but fastest; c: between them on both (dominated by neither);
    # d: dominated by b (worse and slower); e: best of all but without a timing, so on no frontier.
    quality = [0.9, 0.6, 0.7, 0.5, 0.95]
    cost = [10.0, 1.0, 5.0, 2.0, np.nan]
    assert pareto(quality, cost).tolist() == [True, True, True, False, False]
    assert pareto([0.8, 0.8], [1.0, 1.0]).tolist() == [True, True]  # equal points dominate neither


def test_prompt_characters_are_the_mean_over_questions_of_the_top_k() -> None:
    run = pd.DataFrame({"qid": ["q1", "q1", "q1", "q2"], "rank": [1, 2, 3, 1], "chunk_id": ["a", "b", "c", "a"]})
    assert prompt_characters(run, {"a": 100, "b": 20, "c": 5}, k=2) == (120 + 100) / 2
    assert np.isnan(prompt_characters(run.drop(columns="chunk_id"), {"a": 1}, k=2))


def three_methods(n: int = 80) -> pd.DataFrame:
    """nDCG@10 of 80 questions: "close" 0.005 below "best" (within a 0.05 margin), "far" 0.2 below."""
    base = np.linspace(0.3, 0.9, n)
    wiggle = np.tile([0.02, -0.02], n // 2)
    values = {"best": base, "close": base - 0.005 + wiggle, "far": base - 0.2 + wiggle}
    return pd.concat([pd.DataFrame({"method": m, "qid": [f"q{i}" for i in range(n)], "metric": "ndcg", "k": 10,
                                    "value": v, "grain": "document", "kind": "all"}) for m, v in values.items()])


def test_the_cheapest_method_shown_as_good_as_the_best(tmp_path: Path) -> None:
    long = three_methods()
    summary, pairs = summarize(long, ["grain", "kind"], None, n_resamples=1000, margins={("ndcg", 10): 0.05})
    costs = pd.DataFrame({"method": ["best", "close", "far"], "p95_ms": [50.0, 5.0, 1.0],
                          "ram_bytes": [1e6, 1e6, 1e5], "disk_bytes": [1e6, 1e6, 1e5],
                          "dimensions": [384.0, np.nan, np.nan], "usd_per_1k": np.nan,
                          "prompt_chars": [3000.0, 3000.0, 2000.0]})
    table = frontier(summary, pairs, "document", "ndcg", 10, 0.05, costs)
    assert table["method"].tolist() == ["best", "close", "far"] and table["pareto"].tolist() == [True, True, True]
    assert table["no_worse_than_best"].tolist() == [True, True, False]
    assert cheapest_as_good(table) == "close"  # far is cheaper still, but not shown as good
    _, plain = summarize(long, ["grain", "kind"], None, n_resamples=1000)
    assert cheapest_as_good(frontier(summary, plain, "document", "ndcg", 10, 0.05, costs)) == "best"
    for name in ("one", "two"):
        save(frontier_plot(table, "nDCG@10", "t"), tmp_path / f"{name}.png", tmp_path / f"{name}.svg")
    assert (tmp_path / "one.png").read_bytes() == (tmp_path / "two.png").read_bytes()
    assert (tmp_path / "one.svg").read_bytes() == (tmp_path / "two.svg").read_bytes()


def test_a_method_over_the_budget_is_marked_and_never_the_cheapest_choice() -> None:
    long = three_methods()
    summary, pairs = summarize(long, ["grain", "kind"], None, n_resamples=1000, margins={("ndcg", 10): 0.05})
    costs = pd.DataFrame({"method": ["best", "close", "far"], "p95_ms": [50.0, 5.0, 1.0], "ram_bytes": np.nan,
                          "disk_bytes": np.nan, "dimensions": np.nan, "usd_per_1k": np.nan, "prompt_chars": np.nan})
    within = frontier(summary, pairs, "document", "ndcg", 10, 0.05, costs, budget_ms=10.0)
    assert within["over_budget"].tolist() == [True, False, False] and cheapest_as_good(within) == "close"
    tight = frontier(summary, pairs, "document", "ndcg", 10, 0.05, costs, budget_ms=2.0)
    assert tight["over_budget"].tolist() == [True, True, False] and cheapest_as_good(tight) is None
    assert not frontier(summary, pairs, "document", "ndcg", 10, 0.05, costs)["over_budget"].any()


def test_the_plot_s_labels_never_overlap_and_its_axis_is_log_beyond_a_hundredfold() -> None:
    """Twelve methods crowded at nearly the same cost and quality (the demo's BM25 variants): every label's box is
    apart from every other's; the x axis turns logarithmic only when the p95 span more than 100×."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    names = [f"bm25-variant-{i}" for i in range(12)]
    table = pd.DataFrame({"method": names, "mean": 0.5 + 0.002 * np.arange(12), "ci_low": 0.45, "ci_high": 0.6,
                          "p95_ms": 1.0 + 0.01 * np.arange(12), "pareto": False, "over_budget": False})
    figure = frontier_plot(table, "nDCG@10", "t")
    renderer = FigureCanvasAgg(figure).get_renderer()
    axis = figure.axes[0]
    boxes = [text.get_window_extent(renderer) for text in axis.texts]
    assert len(boxes) == 12
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert axis.get_xscale() == "linear"
    wide = table.assign(p95_ms=[0.5] * 6 + [60.0] * 6)  # 120×
    assert frontier_plot(wide, "nDCG@10", "t").axes[0].get_xscale() == "log"
    assert frontier_plot(table.assign(p95_ms=[1.0] * 6 + [90.0] * 6), "nDCG@10", "t").axes[0].get_xscale() == "linear"
