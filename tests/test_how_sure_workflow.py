"""How sure is the table, on the real demo run: the budget and robustness pages, their Parquet and their sentences
in the comparison page's findings."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rankbench.budget import BUDGET_COLUMNS
from rankbench.robustness import BOUNDS_COLUMNS, SURVIVAL_COLUMNS
from workflow_helpers import snakemake

pytestmark = pytest.mark.slow
V1 = Path("results/demo/v1")


def test_budget_and_robustness_pages_parquet_and_findings(demo: Path) -> None:
    budget = pd.read_parquet(demo / V1 / "budget.parquet")
    assert list(budget.columns) == BUDGET_COLUMNS
    aggregate = pd.read_parquet(demo / V1 / "aggregate.parquet")
    kinds = set(aggregate["kind"])
    assert set(budget["kind"]) == kinds
    counts = aggregate.query("grain == 'document' and metric == 'ndcg' and k == 10").groupby("kind")["n"].max()
    for kind, n in budget.query("metric == 'ndcg' and k == 10").groupby("kind")["n"].max().items():
        assert n == counts[kind]
    # every method but the baseline against the baseline, per headline metric and kind
    methods = aggregate["method"].nunique()
    baseline_rows = budget[budget["pair"] == "vs baseline"]
    assert (baseline_rows.groupby(["metric", "k", "kind"]).size() == methods - 1).all()
    assert (budget.loc[budget["pair"] == "vs baseline", "method_b"] == "bm25").all()

    survival = pd.read_parquet(demo / V1 / "robustness.parquet")
    bounds = pd.read_parquet(demo / V1 / "robustness-bounds.parquet")
    assert list(survival.columns) == SURVIVAL_COLUMNS and list(bounds.columns) == BOUNDS_COLUMNS
    assert survival["best_survives"].between(0, 1).all() and survival["tau_min"].between(-1, 1).all()
    # the pessimistic bound is the number on the comparison page
    ndcg = aggregate.query("grain == 'document' and kind == 'all' and metric == 'ndcg' and k == 10")
    pessimistic = bounds.query("metric == 'ndcg' and k == 10").set_index("method")["pessimistic"]
    assert pessimistic.to_dict() == pytest.approx(ndcg.set_index("method")["mean"].to_dict(), abs=1e-12)

    page = (demo / V1 / "comparison.md").read_text()
    findings = page.split("## Findings")[1].split("## All questions")[0]
    assert "you need about" in findings or "tie on" in findings
    assert "Label noise — nDCG@10: the winner" in findings and "More in `robustness.md`." in findings
    assert "`budget.md`" in page and "`robustness.md`" in page
    for name in ("budget", "robustness"):
        assert (demo / V1 / f"{name}.md").read_text().startswith("# demo — question-set version v1")
        assert (demo / V1 / f"{name}.html").exists()


def test_snakemake_report_has_the_how_sure_pages(demo: Path) -> None:
    result = snakemake(demo, "--report", "report-how-sure.html")
    assert result.returncode == 0, result.stderr[-2000:]
    html = (demo / "report-how-sure.html").read_text()
    assert "budget.html" in html and "robustness.html" in html
