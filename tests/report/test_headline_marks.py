"""The headline's marks with their evidence: Holm-adjusted p checked against statsmodels' multipletests over the
chosen family (the baseline's, or planned comparisons), W/T/L counted from the per-question values, footnotes and
HTML tooltips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation.marks import marked
from rankbench.evaluation.scoring import summarize
from rankbench.report.headline_marks import comparison_family, family_legend, headline_grid, with_tooltips
from rankbench.report.pages import markdown_html

multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests

SHIFTS = {"base": 0.0, "big": 0.25, "small": 0.04, "same": 0.0, "worse": -0.2}
HEADLINE = [("ndcg", 10), ("rr", 10)]


def per_query(n: int = 60, seed: int = 3) -> pd.DataFrame:
    """Per-question values of five methods at two metrics: a shared question difficulty plus each method's shift
    and noise, so some differ from `base` clearly, some barely, one not at all."""
    rng = np.random.default_rng(seed)
    difficulty = rng.random(n)
    rows = []
    for metric, k in HEADLINE:
        for method, shift in SHIFTS.items():
            values = np.clip(difficulty + shift + rng.normal(0, 0.15, n), 0, 1).round(1)
            rows += [(method, f"q{i}", metric, k, v) for i, v in enumerate(values)]
    frame = pd.DataFrame(rows, columns=["method", "qid", "metric", "k", "value"])
    return frame.assign(grain="document", kind="all")


@pytest.fixture(scope="module")
def scored():
    values = per_query()
    summary, pairs = summarize(values, ["grain", "kind"], "base", n_resamples=4000, seed=0)
    return values, marked(summary, 0.05), pairs


def _wtl(values: pd.DataFrame, metric: str, a: str, b: str) -> tuple[int, int, int]:
    wide = values[values["metric"] == metric].pivot(index="qid", columns="method", values="value")
    diff = wide[a] - wide[b]
    return int((diff > 1e-9).sum()), int((diff.abs() <= 1e-9).sum()), int((diff < -1e-9).sum())


def test_the_baseline_family_is_holm_over_every_method_against_it(scored) -> None:
    values, table, pairs = scored
    family = comparison_family(table, pairs, "document", HEADLINE, "baseline", 0.05)
    for (metric, _k), rows in family.groupby(["metric", "k"]):
        assert set(rows["method"]) == set(SHIFTS) - {"base"} and (rows["family"] == 4).all()
        reject, adjusted, _, _ = multipletests(rows["p_raw"].to_numpy(), alpha=0.05, method="holm")
        assert rows["p_holm"].to_numpy() == pytest.approx(adjusted, abs=1e-12)
        assert ((rows["mark"] != "").to_numpy() == reject).all()
        for row in rows.itertuples():
            assert (row.wins, row.ties, row.losses) == _wtl(values, metric, row.method, "base")
    marks = dict(zip(family["method"] + family["metric"], family["mark"]))
    assert marks["bigndcg"] == "↑" and marks["worsendcg"] == "↓" and marks["samendcg"] == ""

    grid, notes = headline_grid(table, family, "document", HEADLINE, False, sorted(SHIFTS), every=False)
    assert len(notes) == int((family["mark"] != "").sum())
    big = grid.loc["big", "nDCG@10"]
    number = int(big.split("↑[")[1].rstrip("]"))
    row = family[(family["method"] == "big") & (family["metric"] == "ndcg")].iloc[0]
    assert notes[number] == (f"big vs base, nDCG@10: {row['diff']:+.3f}; Holm-adjusted p = {row['p_holm']:.3g} "
                             f"(raw {row['p_raw']:.3g}); W/T/L {row['wins']}/{row['ties']}/{row['losses']} "
                             "questions; family of 4 comparisons at nDCG@10")
    assert "[" not in grid.loc["same", "nDCG@10"] and "[" not in grid.loc["base", "nDCG@10"]
    page = markdown_html("| method | nDCG@10 |\n|---|---|\n" + "".join(
        f"| {method} | {grid.loc[method, 'nDCG@10']} |\n" for method in grid.index), "t")
    tipped = with_tooltips(page, grid, notes)
    assert f'<span title="{notes[number]}">↑[{number}]</span>' in tipped


def test_planned_comparisons_are_holm_over_the_named_pairs_only(scored) -> None:
    values, table, pairs = scored
    planned = [["small", "same"], ["base", "big"], ["worse", "same"]]
    family = comparison_family(table, pairs, "document", HEADLINE, planned, 0.05)
    for (metric, _k), rows in family.groupby(["metric", "k"]):
        assert rows[["method", "versus"]].values.tolist() == planned and (rows["family"] == 3).all()
        raw = []
        for a, b in planned:  # the raw p of a pair, whichever way pairs.parquet stores it
            found = pairs[(pairs["metric"] == metric) & (pairs["method_a"].isin([a, b]))
                          & (pairs["method_b"].isin([a, b]))]
            raw.append(float(found["p_randomization"].iloc[0]))
        reject, adjusted, _, _ = multipletests(raw, alpha=0.05, method="holm")
        assert rows["p_holm"].to_numpy() == pytest.approx(adjusted, abs=1e-12)
        wide = values[values["metric"] == metric].pivot(index="qid", columns="method", values="value")
        for row, (a, b) in zip(rows.itertuples(), planned):
            assert row.diff == pytest.approx(wide[a].mean() - wide[b].mean(), abs=1e-12)
            assert (row.wins, row.ties, row.losses) == _wtl(values, metric, a, b)
        assert ((rows["mark"] != "").to_numpy() == reject).all()
    grid, notes = headline_grid(table, family, "document", HEADLINE, False, sorted(SHIFTS), every=True)
    assert len(notes) == len(planned) * len(HEADLINE)  # every planned comparison, marked or not
    assert "↓[" in grid.loc["base", "nDCG@10"] and "[" not in grid.loc["big", "nDCG@10"]


def test_the_legend_names_the_family_and_never_a_baseline_that_is_not_there() -> None:
    assert family_legend("baseline", 0.05, None) == ""
    assert "Holm-corrected over every method compared with it" in family_legend("baseline", 0.05, "bm25")
    planned = family_legend([["a", "b"]], 0.05, None)
    assert "(a vs b)" in planned and "no marks (no baseline is configured)" in planned
    assert "mark against the baseline `bm25`" in family_legend([["a", "b"]], 0.05, "bm25")
