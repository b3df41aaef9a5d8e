"""One metric table: labels, families, cutoffs, aliases and formulas come from it, metrics.py names no metric, the
config check reads its names (the schema lists none), and docs/concepts/metrics.md's table is rendered from its rows
(any other page that lists most of a family lists it whole or links that table)."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from workflow_helpers import REPO

from rankbench.configuration.config import check_requested_metrics
from rankbench.errors import InputError
from rankbench.evaluation import metrics
from rankbench.evaluation.metric_inputs import EMPTY, UNJUDGED, MetricInput
from rankbench.evaluation.metric_names import (
    COMPUTED,
    CUTOFFS,
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRIC_ALIASES,
    METRIC_TABLE_MARKER,
    METRICS,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
    Metric,
    metric_label,
    metric_table_markdown,
    parse_metrics,
)

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


def test_the_schema_leaves_the_names_to_the_table() -> None:
    """evaluation.metrics takes strings: a new on-request row needs no schema edit, the config check reads the table."""
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    requested = schema["properties"]["evaluation"]["properties"]["metrics"]
    assert requested["items"] == {"type": "string"} and requested["default"] == []
    on_request = EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL
    check_requested_metrics({"evaluation": {"metrics": list(on_request)}}, "config.yaml")
    known = f"Name metrics computed on request: {', '.join(on_request)} (docs/concepts/metrics.md)."
    for names, message in {("bpref", "ncg"): "evaluation.metrics[1]: names 'ncg', which is no metric of the table",
                           ("ndcg",): "evaluation.metrics[0]: names 'ndcg', which is always computed",
                           ("infAP",): "evaluation.metrics[0]: names 'infAP', which is written 'infap' here"}.items():
        with pytest.raises(InputError) as caught:
            check_requested_metrics({"evaluation": {"metrics": list(names)}}, "config.yaml")
        assert str(caught.value) == f"config.yaml, {message}. {known}"


def test_a_new_row_is_requested_and_shown_without_another_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    """NCG@k, the docs' example, as one row: the config check takes it and the docs' table shows it."""
    ncg = Metric("NCG", "extra", "k", METRICS["ndcg"].formula, ideal_gains=True, graded=True,
                 what="cumulative gain of the top k over the ideal ranking's", checked="a plain loop")
    monkeypatch.setitem(METRICS, "ncg", ncg)
    check_requested_metrics({"evaluation": {"metrics": ["ncg"]}}, "config.yaml")
    assert metric_table_markdown().splitlines()[-1] == (
        "| `ncg` | on request | k | cumulative gain of the top k over the ideal ranking's | a plain loop |")
    with pytest.raises(ValueError, match="`what` and `checked` are one line each"):
        Metric("NCG", "extra", "k", METRICS["ndcg"].formula, what="gain | ideal", checked="a plain loop")


def _documented(text: str) -> dict[str, tuple[str, str]]:
    """A metric table in markdown: name -> (computed, cutoff), in its order."""
    rows = [line.split("|")[1:4] for line in text.splitlines()
            if re.match(r"^\| `\w+` \| (always|chunk grain|on request) \|", line)]
    return {name.strip().strip("`"): (computed.strip(), cutoff.strip()) for name, computed, cutoff in rows}


def test_the_metrics_page_shows_the_table_rendered_from_the_rows() -> None:
    """docs/concepts/metrics.md holds the marker its mkdocs hook replaces with the table, and no row by hand."""
    page = METRICS_PAGE.read_text(encoding="utf-8")
    assert page.count(METRIC_TABLE_MARKER) == 1 and _documented(page) == {}
    mkdocs = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    assert "docs/hooks/metric_table.py" in mkdocs["hooks"]
    spec = importlib.util.spec_from_file_location("metric_table_hook", REPO / "docs/hooks/metric_table.py")
    assert spec and spec.loader
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    rendered = hook.on_page_markdown(page, page=None, config=None, files=None)
    expected = {name: (COMPUTED[metric.family], CUTOFFS[metric.cutoff]) for name, metric in METRICS.items()}
    assert _documented(rendered) == expected and list(_documented(rendered)) == list(METRICS)
    assert "| `bpref` | on request | whole run | trec_eval's bpref: relevant results above judged non-relevant " \
           "ones | pytrec_eval `bpref` |" in rendered
    assert hook.on_page_markdown("# Other page\n", page=None, config=None, files=None) == "# Other page\n"


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
