"""How sure is the table, on the real demo run: the budget and robustness pages, their Parquet and their sentences
in the comparison page's findings."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import demo_grain, snakemake

from rankbench.analysis.budget import BUDGET_COLUMNS
from rankbench.analysis.robustness import (
    BOUNDS_COLUMNS,
    CORRECTED_COLUMNS,
    SURVIVAL_COLUMNS,
)

pytestmark = pytest.mark.slow
V1 = Path("results/demo/v1")
GRAIN = demo_grain()


def test_budget_and_robustness_pages_parquet_and_findings(demo: Path) -> None:
    budget = pd.read_parquet(demo / V1 / "budget.parquet")
    assert list(budget.columns) == BUDGET_COLUMNS
    aggregate = pd.read_parquet(demo / V1 / "aggregate.parquet")
    kinds = set(aggregate["kind"])
    assert set(budget["kind"]) == kinds
    counts = aggregate.query("grain == @GRAIN and metric == 'ndcg' and k == 10").groupby("kind")["n"].max()
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
    # the reported value between the bounds is the number on the comparison page
    ndcg = aggregate.query("grain == @GRAIN and kind == 'all' and metric == 'ndcg' and k == 10")
    reported = bounds.query("metric == 'ndcg' and k == 10").set_index("method")["reported"]
    assert reported.to_dict() == pytest.approx(ndcg.set_index("method")["mean"].to_dict(), abs=1e-12)

    page = (demo / V1 / "comparison.md").read_text()
    findings = page.split("## Findings")[1].split("## All questions")[0]
    assert "you need about" in findings or "tie on" in findings or "are practically tied on" in findings
    assert "Label noise — nDCG@10: the winner" in findings
    assert "More on the [robustness page](robustness.html)." in findings
    assert "[budget page](budget.html)" in page and "[robustness page](robustness.html)" in page
    for name in ("budget", "robustness"):
        assert (demo / V1 / f"{name}.md").read_text().startswith("# demo — question-set version v1")
        assert (demo / V1 / f"{name}.html").exists()
    # the main demo does not judge v1: no LLM row, an empty judge-corrected table, and the page says so
    assert "LLM labels" not in set(survival["perturbation"])
    corrected = pd.read_parquet(demo / V1 / "judge-corrected.parquet")
    assert list(corrected.columns) == CORRECTED_COLUMNS and corrected.empty
    assert "not applicable (no LLM judgements for this version)" in (demo / V1 / "robustness.md").read_text()


def test_the_budget_page_is_short_and_its_lead_table_is_budget_parquet(demo: Path) -> None:
    """Under 80 lines on the demo (12 methods, 4 headline metrics, 6 kinds); each cell of the lead table gives the
    Δ and the questions needed of its row of budget.parquet, all questions."""
    page = (demo / V1 / "budget.md").read_text()
    assert len(page.splitlines()) < 80
    budget = pd.read_parquet(demo / V1 / "budget.parquet").query("kind == 'all'")
    lead = page.split("## Questions needed")[1].split("\n## ")[0]
    rows = [line.strip("|").split(" | ") for line in lead.splitlines() if line.startswith("| ")]
    header, grid = [cell.strip() for cell in rows[0]], {row[0].strip(): [c.strip() for c in row] for row in rows[1:]}
    assert header[1:] == ["nDCG@10", "MRR@10", "R@10", "hit@1"]
    labels = dict(zip([("ndcg", 10), ("rr", 10), ("recall", 10), ("hit", 1)], header[1:]))
    for row in budget.itertuples():
        pair = "best − runner-up" if row.pair == "best vs runner-up" else f"{row.method_a} − {row.method_b}"
        cell = grid[pair][header.index(labels[(row.metric, row.k)])]
        if pd.isna(row.n_needed):
            assert "Δ = 0" in cell
        else:
            assert f"{row.diff:+.3f}: {int(row.n_needed):,}" in cell


def test_findings_and_tiers_name_the_same_methods_as_tied_with_the_best(demo: Path) -> None:
    """The findings' 'not shown different from the best' and tier a are one family (Holm over the pairs with the
    best): on the demo page they name the same methods."""
    tiers = pd.read_parquet(demo / V1 / "tiers.parquet").query(
        "grain == @GRAIN and kind == 'all' and metric == 'ndcg' and k == 10")
    best = tiers.sort_values(["mean", "method"], ascending=[False, True])["method"].iloc[0]
    tier_a = set(tiers.loc[tiers["tier"] == "a", "method"]) - {best}
    page = (demo / V1 / "comparison.md").read_text()
    sentence = next(line for line in page.splitlines() if line.startswith("- On nDCG@10, ")
                    and ("not shown different" in line or "every other method" in line))
    named = sentence.split(" not shown different")[0] if "not shown different" in sentence else ""
    assert {m for m in tiers["method"] if f" {m} (Holm" in f" {named.removeprefix('- On nDCG@10, ')}"} == tier_a


def test_a_judged_version_gets_the_llm_row_and_judge_corrected_metrics(demo: Path) -> None:
    """With llm.judge naming v1 and the judge's grades on disk (written here: the test calls no LLM), robustness
    adds the LLM row and PPI; run again without them, it gives back the plain run's bytes."""
    before = {name: (demo / V1 / name).read_bytes() for name in ("robustness.md", "robustness.parquet")}
    runs = pd.read_parquet(demo / V1 / "runs" / "bm25.parquet")
    pool = runs[runs["rank"] <= 2]
    labels = pd.read_parquet(demo / V1 / "labels.parquet")
    labelled = set(zip(labels["qid"], labels["doc_id"]))
    # a lenient judge: grade 3 on every pooled chunk, so it regrades people's 0-2 labels and adds the unlabelled
    judgements = pd.DataFrame({"qid": pool["qid"].to_numpy(), "kind": "answerable",
                               "chunk_id": pool["chunk_id"].to_numpy(), "doc_id": pool["doc_id"].to_numpy(),
                               "section": None, "judge": pd.array([3] * len(pool), dtype="Int64"),
                               "human": pd.NA, "seconds": 0.0})
    assert any(pair not in labelled for pair in zip(pool["qid"], pool["doc_id"]))
    (demo / V1 / "llm").mkdir(exist_ok=True)
    judgements.to_parquet(demo / V1 / "llm" / "judgements.parquet")
    config = yaml.safe_load((demo / "config.yaml").read_text())
    config["llm"] = {"chat": {"backend": "openai", "base_url": "http://127.0.0.1:9", "model": "none"},
                     "judge": {"qsets": ["v1"], "depth": 2, "methods": ["bm25"]}}
    (demo / "judged.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    target = str(V1 / "robustness.md")
    try:
        result = snakemake(demo, "--forcerun", "robustness", "--cores", "1", target, configfile="judged.yaml")
        assert result.returncode == 0, result.stderr[-3000:]
        survival = pd.read_parquet(demo / V1 / "robustness.parquet")
        llm = survival[survival["perturbation"] == "LLM labels"]
        assert len(llm) == survival[["metric", "k"]].drop_duplicates().shape[0] and (llm["level"] > 0).all()
        corrected = pd.read_parquet(demo / V1 / "judge-corrected.parquet")
        assert list(corrected.columns) == CORRECTED_COLUMNS
        assert set(corrected["estimator"]) == {"human", "judge", "ppi"} and (corrected["n_labelled"] >= 2).all()
        page = (demo / V1 / "robustness.md").read_text()
        assert "not applicable" not in page and "| bm25 |" in page.split("## LLM judge")[1]
    finally:
        (demo / V1 / "llm" / "judgements.parquet").unlink()
        result = snakemake(demo, "--forcerun", "robustness", "--cores", "1", target)
        assert result.returncode == 0, result.stderr[-3000:]
    assert {name: (demo / V1 / name).read_bytes() for name in before} == before


def test_snakemake_report_has_the_how_sure_pages(demo: Path) -> None:
    result = snakemake(demo, "--report", "report-how-sure.html")
    assert result.returncode == 0, result.stderr[-2000:]
    html = (demo / "report-how-sure.html").read_text()
    assert "budget.html" in html and "robustness.html" in html
