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


def test_the_cheapest_method_shown_as_good_as_the_best(tmp_path: Path) -> None:
    n = 80
    base = np.linspace(0.3, 0.9, n)
    wiggle = np.tile([0.02, -0.02], n // 2)
    values = {"best": base, "close": base - 0.005 + wiggle, "far": base - 0.2 + wiggle}
    long = pd.concat([pd.DataFrame({"method": m, "qid": [f"q{i}" for i in range(n)], "metric": "ndcg", "k": 10,
                                    "value": v, "grain": "document", "kind": "all"}) for m, v in values.items()])
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
