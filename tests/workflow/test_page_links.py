"""Every page is reachable from `index.html` and points at files that exist: the demo's pages, crawled link by link
(a quick run's are crawled in test_run_command.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from workflow_helpers import broken_links

pytestmark = pytest.mark.slow


def _reachable(start: Path) -> set[Path]:
    """The files reached from a page by following links from HTML page to HTML page."""
    import re

    seen, todo = set(), [start]
    while todo:
        page = todo.pop()
        if page in seen or not page.exists():
            continue
        seen.add(page)
        if page.suffix == ".html":
            for target in re.findall(r'(?:href|src)="([^"#?$]+)', page.read_text(encoding="utf-8")):
                todo.append((page.parent / target).resolve())
    return seen


def test_every_link_of_the_demo_pages_exists_and_every_page_and_plot_is_reachable(demo: Path) -> None:
    results = demo / "results" / "demo"
    assert broken_links(demo / "results") == []
    reached = _reachable((results / "index.html").resolve())
    pages = {path.resolve() for path in results.glob("v*/*.html")} | {
        path.resolve() for path in results.glob("v*/plots/*.svg")} | {
        path.resolve() for path in (results / "diffs").glob("*.html")}
    assert pages and pages <= reached, sorted(str(p.relative_to(results.resolve())) for p in pages - reached)
    comparison = (results / "v1" / "comparison.md").read_text()
    for target in ("budget.html", "robustness.html", "cost.html", "plots/bars.svg", "plots/calibration.svg"):
        assert f"]({target})" in comparison, target
    assert "`budget.md`" not in comparison and "`cost.md`" not in comparison
