"""Issue 55: comparison.html scrolled sideways at 1280 px (its full metric table is wider). Every Markdown page
(comparison, failures, budget, ...: report/pages.py) and the history page, in headless Chromium at 1280 and 700 px:
the page itself never scrolls sideways; a table wider than the page scrolls in its own box."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from explorer_helpers import chromium

from rankbench.report.history import history_html
from rankbench.report.pages import markdown_html

WIDTH_CHECK = "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"


def wide_page() -> str:
    """What makes a page wide: a table of 40 metric columns, a long unbroken code span and word, a wide image."""
    columns = ["method"] + [f"{name}@{k}" for name in ("hit", "R", "P", "MRR", "nDCG", "MAP", "RBP", "bpref", "Judged",
                                                        "success") for k in (1, 3, 5, 10)]
    rows = [f"| bm25+rerank-cross-encoder[depth={d}] | " + " | ".join(f"0.{d:02d}3 ᵃᵇ" for _ in columns[1:]) + " |"
            for d in range(10, 60, 10)]
    return "\n".join(["# v1: comparison", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns), *rows,
                      "", "The config `" + "methods.bm25-fixed[chunker=fixed-size300].k1" * 8 + "` changed; see "
                      + "results/demo/v1/runs/bm25-fixed%5Bchunker%3Dfixed-size300%5D.ir_metadata.yaml" * 4 + ".",
                      "", "![bars](wide.svg)", ""])


@pytest.mark.parametrize("width", [1280, 700])
def test_no_page_scrolls_sideways(width: int, tmp_path: Path) -> None:
    (tmp_path / "wide.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="3000" height="200">'
                                       '<rect width="3000" height="200" fill="#ccc"/></svg>')
    (tmp_path / "comparison.html").write_text(markdown_html(wide_page(), "v1"), encoding="utf-8")
    methods = [f"bm25+rerank-cross-encoder-ms-marco-minilm-l6-v2[depth={d}]" for d in range(10, 250, 10)]
    means = pd.DataFrame([{"run": f"20261201T0{r}0000Z-abc", "run_number": r, "label": "`methods." + "x" * 120
                           + "` 1 → 2", "method": m, "metric": "ndcg", "k": 10, "mean": 0.5 + r / 100}
                          for r in range(1, 9) for m in methods])
    (tmp_path / "history.html").write_text(history_html("demo", {"v1": means}, [("ndcg", 10)]), encoding="utf-8")
    with chromium(width, 900) as driver:
        for page in ("comparison.html", "history.html"):
            driver.get((tmp_path / page).as_uri())
            scroll, client = driver.execute_script(WIDTH_CHECK)
            assert scroll <= client, (page, scroll, client)
        # the chart's legend of method names (all 24 of them, long) lies inside the chart
        cut = driver.execute_script("const v=document.querySelector('svg').viewBox.baseVal;return [...document."
                                    "querySelectorAll('svg g[data-method] > text')].filter(t=>{const b=t.getBBox();"
                                    "return b.x+b.width>v.width||b.y+b.height>v.height}).map(t=>t.textContent)")
        assert cut == []
        driver.get((tmp_path / "comparison.html").as_uri())
        box = driver.execute_script("const b=document.querySelector('div.wide');return [b.scrollWidth,b.clientWidth]")
        assert box[0] > box[1]  # the table is wider than the page: it scrolls in its box
