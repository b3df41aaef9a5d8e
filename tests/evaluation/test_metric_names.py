"""One metric table: labels, families, cutoffs, aliases and formulas come from it, metrics.py names no metric, and
the config schema and the docs list exactly its metrics (docs/concepts/metrics.md's table; any other page that lists
most of a family lists it whole or links that table)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from workflow_helpers import REPO

from rankbench.evaluation import metrics
from rankbench.evaluation.metric_inputs import EMPTY, UNJUDGED, MetricInput
from rankbench.evaluation.metric_names import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRIC_ALIASES,
    METRICS,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
    metric_label,
    parse_metrics,
)

# How docs/concepts/metrics.md's table says a row's family and cutoff.
COMPUTED = {"standard": "always", "pollution": "chunk grain", "extra": "on request"}
CUTOFF = {"k": "k", "whole": "whole run", "either": "either"}
METRICS_PAGE = REPO / "docs" / "concepts" / "metrics.md"


def test_the_name_lists_are_the_table_read_by_family_and_cutoff() -> None:
    lists = {("standard", ("k", "either")): METRICS_AT_K, ("standard", ("whole",)): METRICS_FULL,
             ("pollution", ("k",)): POLLUTION_METRICS, ("extra", ("k",)): EXTRA_METRICS_AT_K,
             ("extra", ("whole",)): EXTRA_METRICS_FULL}
    for (family, cutoffs), names in lists.items():
        assert names, (family, cutoffs)
        assert all(METRICS[name].family == family and METRICS[name].cutoff in cutoffs for name in names), names
        assert list(names) == [name for name in METRICS if name in names]  # table order
    every = [name for names in lists.values() for name in names]
    assert sorted(every) == sorted(METRICS)  # each metric in exactly one list
    assert metrics.METRICS_AT_K is METRICS_AT_K  # metrics.py computes the table's metrics, no list of its own
    assert metric_label("ndcg", 10) == "nDCG@10" and metric_label("r_precision", 0) == "R-prec"
    assert parse_metrics("map,P_5,success@1") == [("ap", 0), ("precision", 5), ("hit", 1)]


def test_metrics_py_names_no_metric() -> None:
    """Which formula computes a metric is its row's: metrics.py holds no metric name or alias as a string."""
    tree = ast.parse((REPO / "src/rankbench/evaluation/metrics.py").read_text(encoding="utf-8"))
    names = (METRICS.keys() | METRIC_ALIASES.keys()) - {metric.reads for metric in METRICS.values()}  # reads="r"
    named = sorted({node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                    and isinstance(node.value, str) and node.value.lower() in names})
    assert not named, f"metrics.py names metrics {named}: give the row a formula or a fact it reads instead"


@pytest.mark.parametrize("name", sorted(METRICS))
def test_each_formula_gives_a_column_per_cutoff(name: str) -> None:
    """[question, len(ks)] at a cutoff, [question, 1] over the whole run, finite: what metrics.py's long table reads."""
    rng = np.random.default_rng(0)
    grades = rng.integers(-1, 4, (4, 6)).astype(np.int32)
    grades[0, 4:] = EMPTY
    grades[1, 2] = UNJUDGED
    ks = np.array([1, 3, 10])
    ideal = np.sort(rng.integers(0, 4, (4, 6)), axis=1)[:, ::-1] + 1.0
    read = MetricInput(grades, np.array([4, 6, 6, 6]), ideal, np.array([2, 3, 1, 4]), np.array([1, 2, 0, 3]),
                       rng.integers(-1, 3, (4, 6)), ks, 1, "linear", 0.8)
    values = METRICS[name].formula(read)
    assert values.shape == (4, 1 if METRICS[name].cutoff == "whole" else len(ks)) and values.dtype == np.float64
    assert np.isfinite(values).all()


def test_the_schema_lists_the_metrics_on_request() -> None:
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    requested = schema["properties"]["evaluation"]["properties"]["metrics"]["items"]["enum"]
    on_request = EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL
    assert sorted(requested) == sorted(on_request), (
        f"workflow/schemas/config.schema.yaml, evaluation.metrics' enum: add {sorted(set(on_request) - set(requested))}"
        f", remove {sorted(set(requested) - set(on_request))}")


def _documented() -> dict[str, tuple[str, str]]:
    """docs/concepts/metrics.md's metric table: name -> (computed, cutoff), in its order."""
    rows = [line.split("|")[1:4] for line in METRICS_PAGE.read_text(encoding="utf-8").splitlines()
            if re.match(r"^\| `\w+` \| (always|chunk grain|on request) \|", line)]
    return {name.strip().strip("`"): (computed.strip(), cutoff.strip()) for name, computed, cutoff in rows}


def test_the_metrics_page_has_a_row_per_metric() -> None:
    documented = _documented()
    expected = {name: (COMPUTED[metric.family], CUTOFF[metric.cutoff]) for name, metric in METRICS.items()}
    missing, extra = sorted(expected.keys() - documented.keys()), sorted(documented.keys() - expected.keys())
    assert not missing and not extra, (f"docs/concepts/metrics.md's metric table: add a row for {missing}, "
                                       f"remove {extra} (metric_names.py's METRICS)")
    assert documented == expected  # the same computed and cutoff columns as the rows
    assert list(documented) == list(METRICS)  # in table order


def _units(text: str) -> list[str]:
    """A page's table rows one by one and its other blocks (paragraphs, list items) whole."""
    units: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        units += [line for line in lines if line.startswith("|")]
        units.append("\n".join(line for line in lines if not line.startswith("|")))
    return units


def listings(text: str) -> list[tuple[str, list[str]]]:
    """Blocks of a page that list more than half of a family's metrics (named in backticks, with or without @k) but
    not all of it, without linking docs/concepts/metrics.md: (the block's start, the family's metrics it leaves out)."""
    found = []
    for unit in _units(text):
        named = {name.split("@")[0] for name in re.findall(r"`([\w@]+)`", unit)}
        if "metrics.md" in unit:
            continue
        for family in COMPUTED:
            members = [name for name, metric in METRICS.items() if metric.family == family]
            left_out = [name for name in members if name not in named]
            if 2 * (len(members) - len(left_out)) > len(members) and left_out:
                found.append((unit[:80], left_out))
    return found


def test_no_other_page_lists_part_of_a_family() -> None:
    """A page that lists the metrics names every one of them, or links the metric table instead of listing."""
    pages = sorted(path for path in (REPO / "docs").rglob("*.md") if path != METRICS_PAGE)
    stale = {str(page.relative_to(REPO)): found for page in pages if (found := listings(page.read_text("utf-8")))}
    assert not stale, f"pages listing the metrics without some (link docs/concepts/metrics.md instead): {stale}"


def test_a_listing_that_leaves_a_metric_out_is_found() -> None:
    complete = "`" + "`, `".join(EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL) + "`"
    assert listings(f"| `metrics` | {complete} |") == []
    assert listings(f"| `metrics` | {complete.replace('`bpref`, ', '')} |")[0][1] == ["bpref"]
    assert listings(f"on request: {complete.replace('`bpref`, ', '')} ([table](metrics.md))") == []
    assert listings("`bpref`, `err@10` and `rbp`") == []  # examples, not a listing


def test_the_pages_link_the_metric_table() -> None:
    """Where a page used to list the metrics, it links the table (a listing there would go stale)."""
    for page in ("docs/concepts/pipeline.md", "docs/reference/config.md", "docs/reference/eval-cli.md"):
        assert "metrics.md" in Path(REPO, page).read_text(encoding="utf-8"), page
