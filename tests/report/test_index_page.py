"""The dataset's entry page: every version with its headline, links only to the pages that exist, all relative."""

from __future__ import annotations

import re

import pandas as pd

from rankbench.report.index_page import VERSION_PAGES, VERSION_PLOTS, VersionEntry, index_page

REPORT = {"grain": "chunk", "headline": [["ndcg", 10], ["hit", 1]]}


def aggregate(shift: float, kinds: tuple[str, ...] = ("all", "answerable", "unanswerable")) -> pd.DataFrame:
    rows = [{"method": method, "grain": grain, "kind": kind, "metric": metric, "k": k, "n": 40,
             "mean": value + shift + (0.1 if grain == "document" else 0.0) - (0.2 if kind != "all" else 0.0)}
            for method, value in (("bm25", 0.5), ("dense", 0.7), ("hybrid[k=60]", 0.7)) for kind in kinds
            for grain in ("chunk", "document") for metric, k in (("ndcg", 10), ("hit", 1))]
    return pd.DataFrame(rows)


def test_each_version_has_its_headline_at_the_report_grain_and_links_to_its_pages() -> None:
    versions = [VersionEntry("v1", "a" * 64, 50, aggregate(0.0), [*VERSION_PAGES, *VERSION_PLOTS]),
                VersionEntry("v2", "b" * 64, 52, aggregate(0.05), ["comparison.html"], draft=True)]
    page = index_page("demo", versions, ["v1-vs-v2.html"], True, REPORT, "bm25")
    links = re.findall(r'href="([^"]+)"', page)
    assert links == [f"v1/{name}" for name in [*VERSION_PAGES, *VERSION_PLOTS]] + [
        "v2/comparison.html", "diffs/v1-vs-v2.html", "history.html"]
    assert '<a href="v1/plots/bars.svg">bars</a> (the plot metric of each method with its 95% CI)' in page
    assert "quick run" not in page
    assert "chunk grain, all questions" in page and "50 questions, 40 with a relevant label" in page
    v1 = page.split("Question-set version v1")[1].split("Question-set version v2")[0]
    row = re.search(r"<td>nDCG@10</td>\s*<td>([^<]*)</td>\s*<td[^>]*>([^<]*)</td>\s*<td[^>]*>([^<]*)</td>", v1)
    assert row and row.groups() == ("dense, hybrid[k=60]", "0.700", "0.500")  # chunk grain, ties listed
    assert "Question-set version v2 (draft: not frozen)" in page and "explorer" not in page.split("v2")[-1]
    assert not re.search(r"(src|href)=\"(https?:)?//", page)


def test_a_quick_run_without_baseline_diffs_or_history_links_the_comparison_pages_only() -> None:
    versions = [VersionEntry("v1", "a" * 64, 50, aggregate(0.0), ["comparison.html"])]
    page = index_page("demo", versions, [], False, REPORT, None, quick=True)
    assert re.findall(r'href="([^"]+)"', page) == ["v1/comparison.html"]
    assert "the plots, the diffs between versions and the history are absent" in page
    assert "<code>rankbench run</code> (without <code>--quick</code>) builds them" in page
    assert "Between versions" not in page and "history.html" not in page and ">baseline</th>" in page


def test_questions_of_one_kind_get_no_link_to_the_per_kind_heatmap() -> None:
    # BEIR data (SciFact): every question is of one kind, so the heatmap would be one column repeating the bars
    for kinds in (("all",), ("all", "beir")):
        versions = [VersionEntry("test", "a" * 64, 50, aggregate(0.0, kinds), [*VERSION_PAGES, *VERSION_PLOTS])]
        links = re.findall(r'href="([^"]+)"', index_page("scifact", versions, [], False, REPORT, "bm25"))
        assert "test/plots/kinds.svg" not in links and "test/plots/bars.svg" in links
