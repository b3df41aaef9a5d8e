"""report.grain and report.columns: the headline's grain with the other beside it, DCG/MAP/pollution reachable in
the full tables, pollution never bold or marked, and a bad column named before anything runs."""

from __future__ import annotations

import pandas as pd
import pytest

from rankbench.errors import InputError
from rankbench.evaluation.marks import marked
from rankbench.records.provenance import report_settings
from rankbench.report.comparison import other_grain_lines
from rankbench.report.tables import table_metrics


def aggregate() -> pd.DataFrame:
    rows = []
    for method, value in (("bm25", 0.5), ("dense", 0.7)):
        for grain in ("chunk", "document"):
            metrics = [("ndcg", 10), ("dcg", 10), ("ap", 10)] + ([("top_doc_share", 10)] if grain == "chunk" else [])
            for metric, k in metrics:
                rows.append({"method": method, "grain": grain, "kind": "all", "metric": metric, "k": k, "n": 40,
                             "mean": value + (0.1 if grain == "document" else 0.0), "ci_low": 0.0, "ci_high": 1.0,
                             "baseline": "bm25", "diff": value - 0.5, "p_holm": 0.001 if method != "bm25" else None,
                             "below_one_question": False})
    return pd.DataFrame(rows)


def test_columns_resolve_aliases_and_cutoffs_and_a_bad_one_is_named() -> None:
    config = {"report": {"grain": "chunk", "columns": ["dcg@10", "map", "distinct_docs@10"]}}
    settings = report_settings(config, [5, 10], "config.yaml")
    assert settings["grain"] == "chunk"
    assert settings["columns"] == [["dcg", 10], ["ap", 5], ["ap", 10], ["distinct_docs", 10]]
    assert ("dcg", 10) in table_metrics(aggregate(), [10], settings["columns"])
    for bad, why in (("nope", "not a metric reported at k"), ("dcg@3", "not in evaluation.ks"),
                     ("err@10", "computed only on request")):
        with pytest.raises(InputError, match=why):
            report_settings({"report": {"columns": [bad]}}, [5, 10], "config.yaml")


def test_the_other_grain_stands_beside_the_headline_and_pollution_carries_no_marks() -> None:
    table = marked(aggregate(), 0.05)
    lines = other_grain_lines(table, "chunk", [("ndcg", 10)], False, ["bm25", "dense"])
    assert lines[0].startswith("The same at document grain") and "headline above is at chunk grain" in lines[0]
    assert "| dense | **0.800**↑ |" in lines[2]  # the document-grain figures, not the chunk ones (0.700)
    share = table[table["metric"] == "top_doc_share"]
    assert not share["best"].any() and (share["significant"] == "").all()
    assert other_grain_lines(table[table["grain"] == "chunk"], "chunk", [("ndcg", 10)], False, ["bm25"]) == []
