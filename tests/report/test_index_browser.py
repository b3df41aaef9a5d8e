"""The demo's entry page (results/demo/index.html) in headless Chromium: every link resolves to a page of the run,
each page opens without console errors, and nothing on any of them loads from the network. Screenshots of the
entry page go to results/index-screenshots/ (docs/concepts/report.md shows one)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from explorer_helpers import chromium
from workflow_helpers import REPO

SHOTS = REPO / "results" / "index-screenshots"
# Every address a page fetched (the page itself, images, frames): the Resource Timing entries and the navigation.
RESOURCES = ("return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name))")


def _severe(driver) -> list[dict]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.mark.slow
def test_every_link_of_the_entry_page_resolves_and_no_page_loads_from_the_network(demo: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    results = demo / "results" / "demo"
    index = results / "index.html"
    with chromium(1200, 900) as driver:
        driver.get(index.as_uri())
        assert not _severe(driver)
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / "index.png"))
        links = [a.get_attribute("href") for a in driver.find_elements("css selector", "a")]
        files = [Path(unquote(urlsplit(link).path)) for link in links]
        assert all(urlsplit(link).scheme == "file" for link in links), links
        expected = {results / qset / page for qset in ("v1", "v2", "v3") for page in (
            "comparison.html", "breakdowns.html", "explorer.html", "failures.html", "budget.html", "robustness.html",
            "calibration.html", "cost.html", "plots/bars.svg", "plots/calibration.svg", "plots/grades.svg",
            "plots/kinds.svg", "plots/recall.svg")} | {results / "diffs" / "v1-vs-v2.html", results / "history.html"}
        assert set(files) == expected
        for page in [index, *files]:
            assert page.is_file(), page
            driver.get(page.as_uri())
            # the explorer's page, large, can still be parsing when the driver returns on a loaded machine (seen on
            # two cores): it must complete, within a minute
            WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.readyState") == "complete")
            assert not _severe(driver), (page, _severe(driver))
            fetched = driver.execute_script(RESOURCES)
            assert all(urlsplit(url).scheme in ("file", "data", "blob", "about") for url in fetched), (page, fetched)
        driver.get(index.as_uri())
        driver.set_window_size(700, 900)
        driver.save_screenshot(str(SHOTS / "index-narrow.png"))
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
