"""One metric table: labels, families, cutoffs and aliases come from it, and the config schema and the docs
(docs/concepts/pipeline.md) list exactly its metrics."""

from __future__ import annotations

import re

import yaml
from workflow_helpers import REPO

from rankbench.evaluation import metrics
from rankbench.evaluation.metric_names import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRICS,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
    metric_label,
    parse_metrics,
)


def test_the_name_lists_are_the_table_read_by_family_and_cutoff() -> None:
    assert METRICS_AT_K == ("hit", "recall", "rcap_recall", "precision", "rr", "ndcg", "dcg", "ap", "judged",
                            "mean_grade")
    assert METRICS_FULL == ("r_precision",) and POLLUTION_METRICS == ("distinct_docs", "top_doc_share")
    assert EXTRA_METRICS_AT_K == ("err", "ndcg_condensed")
    assert EXTRA_METRICS_FULL == ("bpref", "infap", "rbp", "rbp_residual")
    assert set(METRICS) == set(METRICS_AT_K + METRICS_FULL + POLLUTION_METRICS + EXTRA_METRICS_AT_K
                               + EXTRA_METRICS_FULL)
    assert metrics.METRICS_AT_K is METRICS_AT_K  # metrics.py computes the table's metrics, no list of its own
    assert metric_label("ndcg", 10) == "nDCG@10" and metric_label("r_precision", 0) == "R-prec"
    assert parse_metrics("map,P_5,success@1") == [("ap", 0), ("precision", 5), ("hit", 1)]


def test_the_schema_and_the_docs_list_the_table() -> None:
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    requested = schema["properties"]["evaluation"]["properties"]["metrics"]["items"]["enum"]
    assert sorted(requested) == sorted(EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL)
    readme = (REPO / "docs" / "concepts" / "pipeline.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `metric` | str |"))
    assert sorted(re.findall(r"`(\w+)`", row)[1:]) == sorted(METRICS)
    uncut = next(line for line in readme.splitlines() if line.startswith("| `k` | int |"))
    assert sorted(re.findall(r"`(\w+)`", uncut)[2:]) == sorted(METRICS_FULL + EXTRA_METRICS_FULL)
