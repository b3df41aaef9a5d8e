"""What metrics.py prepares for a metric (how deep it reads the run, ideal gains, non-relevant counts) comes from the
metric table, not from which other metrics were asked with it: every metric alone gives what it gives among all."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation.metric_names import ERR_MAX_GRADE, METRICS
from rankbench.evaluation.metrics import per_query_metrics

KS = (1, 3)  # far above neither the runs' length nor the number relevant: deep-reading metrics read past them


def _random_run(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run of 30 chunks (of 10 documents) for each of 12 questions, and graded labels (-1..ERR_MAX_GRADE) on about
    half of each question's pool, with more relevant labels than the largest cutoff."""
    rng = np.random.default_rng(seed)
    run_rows, label_rows = [], []
    for q in range(12):
        pool = [f"d{d}-c{c}" for d in range(10) for c in range(5)]
        retrieved = rng.choice(len(pool), size=int(rng.integers(5, 31)), replace=False)
        for rank, index in enumerate(retrieved, start=1):
            run_rows.append((f"q{q}", pool[index], pool[index].split("-")[0], rank, 100.0 - rank))
        for index in rng.choice(len(pool), size=25, replace=False):
            label_rows.append((f"q{q}", pool[index], int(rng.integers(-1, ERR_MAX_GRADE + 1))))
    run = pd.DataFrame(run_rows, columns=["qid", "item_id", "doc_id", "rank", "score"])
    return run, pd.DataFrame(label_rows, columns=["qid", "item_id", "grade"])


@pytest.mark.parametrize(("seed", "threshold", "gain"),
                         [(0, 1, "linear"), (1, 2, "linear"), (2, 1, "exponential"), (3, 3, "exponential")])
def test_every_metric_alone_gives_what_it_gives_among_all(seed: int, threshold: int, gain: str) -> None:
    run, qrels = _random_run(seed)
    options = {"relevance_threshold": threshold, "gain": gain, "rbp_p": 0.7}
    together = per_query_metrics(run, qrels, KS, metrics=list(METRICS), **options)
    for name in METRICS:
        expected = together[together["metric"] == name].reset_index(drop=True)
        assert (expected["value"] != 0).any(), name  # a value to compare, not zeros on both sides
        alone = per_query_metrics(run, qrels, KS, metrics=[name], **options)
        pd.testing.assert_frame_equal(alone, expected, check_exact=True, obj=name)
