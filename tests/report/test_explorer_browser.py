"""The explorer in a real browser (headless Debian Chromium): filters, one question, links and keyboard, checked
against the workflow's Parquet files; screenshots of the main views go to results/explorer-screenshots/."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pandas as pd
import pytest
from explorer_helpers import SETTINGS, chromium, payload_args, tiny_inputs
from workflow_helpers import REPO, demo_grain, snakemake

from rankbench.io.ranked_lists import collapse_to_documents
from rankbench.report.explorer import explorer_html, explorer_payload

SHOTS = REPO / "results" / "explorer-screenshots"
PAIR = ("hybrid[k=60]", "dense-e5")
GRAIN = demo_grain()  # the explorer's grain: the demo's report.grain


def _open(driver, page: Path, fragment: str = "") -> None:
    driver.get(page.as_uri() + fragment)
    assert driver.execute_script("return document.documentElement.dataset.ready") is not None
    _no_errors(driver)


def _no_errors(driver) -> None:
    errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors


def _select(driver, element_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", element_id)).select_by_value(value)


def _listed(driver) -> list[str]:
    """Question ids of every page of the list (clicking Next until the end), back on the first page after."""
    qids = []
    while True:
        qids += [row.get_attribute("data-qid") for row in driver.find_elements("css selector", "#qtable tbody tr")]
        button = driver.find_element("id", "next")
        if not button.is_enabled():
            break
        button.click()
    return qids


def _eventually(driver, holds) -> bool:
    """Whether holds(driver) comes true within 10 s; the page re-renders after a hash change (an asynchronous
    event), so elements read too early may be stale or still show the previous question."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(holds)
    except TimeoutException:
        return False
    return True


def _shows(driver, qid: str) -> bool:
    """Whether the detail pane comes to show question qid."""
    return _eventually(driver, lambda d: d.find_element("id", "detail-heading").text == qid)


def _wtl(driver) -> tuple[int, int, int]:
    return tuple(int(driver.find_element("id", f"wtl-{o}").text) for o in ("win", "tie", "loss"))


def _pairs(pairs: pd.DataFrame, grain: str) -> dict[tuple, tuple[int, int, int]]:
    """(a, b, kind, metric, k) -> W/T/L of a against b from pairs.parquet at the explorer's grain, both orders."""
    rows = pairs[pairs["grain"] == grain]
    counts = {}
    for a, b, kind, metric, k, w, t, lost in rows[["method_a", "method_b", "kind", "metric", "k", "wins", "ties",
                                                "losses"]].itertuples(index=False):
        counts[(a, b, kind, metric, int(k))] = (int(w), int(t), int(lost))
        counts[(b, a, kind, metric, int(k))] = (int(lost), int(t), int(w))
    return counts


@pytest.mark.slow
def test_a_hostile_question_text_is_shown_as_text_and_the_page_runs_without_errors(tmp_path) -> None:
    hostile = "</script><img src=x onerror=\"document.title='owned'\"> <b>bold?</b>"
    page = tmp_path / "explorer.html"
    page.write_text(explorer_html(explorer_payload(*payload_args(tiny_inputs(question_text=hostile)))))
    with chromium() as driver:
        _open(driver, page, "#q=q1")
        assert driver.find_element("id", "qtext").text == hostile
        assert "owned" not in driver.title and not driver.find_elements("css selector", "#detail img, #detail b.x")
        # Tiny set, checked against its own pairs: bm25 vs dense on nDCG@3 over every question both evaluate.
        _select(driver, "f-a", "bm25")
        _select(driver, "f-b", "dense")
        assert _wtl(driver) == _pairs(tiny_inputs()["pairs"], SETTINGS.grain)[("bm25", "dense", "all", "ndcg", 3)]


_CARDS = "return [...document.querySelectorAll('section.method')].map(s => s.dataset.method)"


def test_the_pair_in_the_link_drives_the_side_by_side_lists_and_cards_describe_their_method(tmp_path) -> None:
    """Regression (issue 27): `#q=..&a=..&b=..` set the pairwise selectors while the lists followed `show=`."""
    inputs = tiny_inputs()
    inputs["settings"] = dataclasses.replace(inputs["settings"], cards={
        "dense": {"description": "cosine over <e5> embeddings", "models": ["encoders.e5"]}})
    page = tmp_path / "explorer.html"
    page.write_text(explorer_html(explorer_payload(*payload_args(inputs))))
    with chromium() as driver:
        _open(driver, page, "#q=q1&a=dense&b=rerank")  # neither is a default of the pair (bm25 is the baseline)
        assert driver.execute_script(_CARDS) == ["dense", "rerank"]
        assert (driver.find_element("id", "f-a").get_attribute("value"),
                driver.find_element("id", "f-b").get_attribute("value")) == ("dense", "rerank")
        card = driver.find_element("css selector", 'section.method[data-method="dense"]')
        assert card.find_element("css selector", ".description").text == "cosine over <e5> embeddings"
        assert "models: encoders.e5" in card.find_element("css selector", ".meta").text
        option = driver.find_element("css selector", '#f-a option[value="dense"]')
        assert option.get_attribute("title") == "cosine over <e5> embeddings"
        _select(driver, "f-b", "bm25")  # the lists follow the pair
        assert _eventually(driver, lambda d: d.execute_script(_CARDS) == ["dense", "bm25"])
        driver.find_element("css selector", '#show input[value="rerank"]').click()  # and add a third
        assert _eventually(driver, lambda d: d.execute_script(_CARDS) == ["dense", "bm25", "rerank"])
        assert "also=rerank" in driver.current_url and "show=" not in driver.current_url
        assert driver.find_element("css selector", '#show input[value="dense"]').get_attribute("disabled")
        # A link of the earlier form (`show=` without the pair) opens the same lists, its first two as the pair.
        _open(driver, page, "#q=q1&show=rerank,dense")
        assert _eventually(driver, lambda d: d.execute_script(_CARDS) == ["rerank", "dense"])
        assert driver.find_element("id", "f-a").get_attribute("value") == "rerank"
        _no_errors(driver)


@pytest.mark.slow
def test_the_since_the_last_run_filter_keeps_the_questions_that_moved(tmp_path) -> None:
    changed = pd.DataFrame({"method": ["bm25", "dense", "dense"], "metric": ["ndcg"] * 3, "k": [3] * 3,
                            "qid": ["q1", "q2", "q4"], "before": [1.0, 0.0, 0.5], "after": [0.5, 1.0, 0.2],
                            "delta": [-0.5, 1.0, -0.3]})
    page = tmp_path / "explorer.html"
    page.write_text(explorer_html(explorer_payload(*payload_args(tiny_inputs()), changed)))
    with chromium() as driver:
        _open(driver, page)
        everything = _listed(driver)
        _select(driver, "f-moved", "worse")
        assert sorted(_listed(driver)) == ["q1", "q4"]
        _select(driver, "f-moved-method", "dense")
        assert _listed(driver) == ["q4"]
        _select(driver, "f-moved", "better")
        assert _listed(driver) == ["q2"]
        assert "moved=better" in driver.current_url and "moved_method=dense" in driver.current_url
        driver.find_element("id", "reset").click()
        assert _listed(driver) == everything


@pytest.fixture(scope="module")
def demo_v1(demo: Path) -> Path:
    return demo / "results" / "demo" / "v1"


@pytest.mark.slow
def test_both_versions_have_an_explorer_and_it_is_rebuilt_byte_identical(demo: Path) -> None:
    pages = [demo / "results" / "demo" / qset / "explorer.html" for qset in ("v1", "v2")]
    before = [page.read_bytes() for page in pages]
    result = snakemake(demo, "--cores", "1", "--forcerun", "explorer", *(str(p.relative_to(demo)) for p in pages))
    assert result.returncode == 0, result.stderr[-2000:]
    assert [page.read_bytes() for page in pages] == before
    assert "[explorer.html](explorer.html)" in (pages[0].parent / "comparison.md").read_text()


@pytest.mark.slow
def test_pairwise_counts_equal_pairs_parquet_for_every_pair_metric_and_kind(demo_v1: Path) -> None:
    pairs = _pairs(pd.read_parquet(demo_v1 / "pairs.parquet"), GRAIN)
    questions = pd.read_parquet(demo_v1 / "questions.parquet")
    with chromium() as driver:
        _open(driver, demo_v1 / "explorer.html")
        # Through the controls: A = hybrid[k=60], B = dense-e5, nDCG@10; then only the questions A wins.
        _select(driver, "f-a", PAIR[0])
        _select(driver, "f-b", PAIR[1])
        expected = pairs[(*PAIR, "all", "ndcg", 10)]
        assert _wtl(driver) == expected and sum(expected) == 50 - 7  # v1: 7 unanswerable questions
        _select(driver, "f-outcome", "win")
        assert len(_listed(driver)) == expected[0]
        _select(driver, "f-outcome", "loss")
        assert len(_listed(driver)) == expected[2]
        _select(driver, "f-outcome", "")
        _select(driver, "f-kind", "exact-code")
        assert _wtl(driver) == pairs[(*PAIR, "exact-code", "ndcg", 10)]
        SHOTS.mkdir(parents=True, exist_ok=True)
        _select(driver, "f-kind", "")
        _select(driver, "f-outcome", "win")
        driver.find_element("css selector", "#qtable a.qlink").click()
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(SHOTS / "explorer-list.png"))
        # Every pair, metric and kind at once through the page's own filter function.
        counts = driver.execute_script("""
            const out = [];
            for (const [j, metric] of D.metrics.entries()) for (const kind of ["", ...D.kinds])
              for (const a of M) for (const b of M) if (a.name < b.name) {
                const w = filtered(Object.assign({}, state, {a: a.name, b: b.name, metric: j, kind: kind,
                                                             outcome: "", text: ""})).wtl;
                out.push([a.name, b.name, metric.metric, metric.k, kind || "all", w.win, w.tie, w.loss]);
              }
            return out;""")
    kinds_with_questions = {key[2] for key in pairs}
    checked = 0
    for a, b, metric, k, kind, *wtl in counts:
        if kind not in kinds_with_questions:  # kinds without a relevant label (unanswerable) have no pairs
            assert wtl == [0, 0, 0] and (questions["kind"] == kind).any()
            continue
        if (a, b, kind, metric, k) not in pairs:  # pairs.parquet keeps every pair only where a decision reads it
            assert (metric, k) != ("ndcg", 10)  # the headline metric: every pair, every kind
            continue
        assert tuple(wtl) == pairs[(a, b, kind, metric, k)], (a, b, metric, k, kind)
        checked += 1
    assert checked > 500


@pytest.mark.slow
def test_failure_leak_kind_audience_and_answerable_filters_list_the_parquet_questions(demo_v1: Path) -> None:
    failures = pd.read_parquet(demo_v1 / "failures.parquet")
    questions = pd.read_parquet(demo_v1 / "questions.parquet")
    labels = pd.read_parquet(demo_v1 / "labels.parquet")
    reranker = "bm25+rerank-e5[depth=30]"
    with chromium() as driver:
        _open(driver, demo_v1 / "explorer.html")
        _select(driver, "f-fail-method", reranker)
        for value, rows in (("recall", failures["class"] == "recall failure"),
                            ("ranking", failures["class"] == "ranking failure"),
                            ("rank1", failures["failure"] == "rank 1"), ("topk", failures["failure"] == "top 10")):
            _select(driver, "f-fail", value)
            expected = failures[(failures["method"] == reranker) & rows]["qid"]
            assert sorted(_listed(driver)) == sorted(set(expected)), value
        assert set(failures[failures["method"] == reranker]["class"]) == {"recall failure", "ranking failure"}
        _select(driver, "f-fail", "")
        for method in ("bm25", "dense-e5", "bm25-filtered"):
            leaks = pd.read_parquet(demo_v1 / "leaks" / f"{method}.parquet")
            _select(driver, "f-leak-method", method)
            for leak in ("staff", "outdated"):
                _select(driver, "f-leak", leak)
                expected = leaks[(leaks["leak"] == leak) & (leaks["k"] == 10) & (leaks["count"] > 0)]["qid"]
                assert sorted(_listed(driver)) == sorted(expected), (method, leak)
        assert driver.find_element("id", "count").text.startswith("No question matches")  # bm25-filtered
        _select(driver, "f-leak", "")
        _select(driver, "f-kind", "exact-code")
        assert _listed(driver) == questions[questions["kind"] == "exact-code"]["qid"].tolist()
        _select(driver, "f-kind", "")
        _select(driver, "f-audience", "staff")
        assert _listed(driver) == questions[questions["audience"] == "staff"]["qid"].tolist()
        _select(driver, "f-audience", "")
        _select(driver, "f-answerable", "0")
        answerable = set(labels.loc[labels["grade"] >= 1, "qid"])
        assert _listed(driver) == [q for q in questions["qid"] if q not in answerable]
        _no_errors(driver)


_DISPLAYED = """
const cards = {};
for (const card of document.querySelectorAll("section.method")) {
  const metrics = {};
  const headers = [...document.querySelectorAll("#metrics-all thead th")].slice(1).map(h => h.textContent);
  const cells = document.querySelectorAll(`#metrics-all tr[data-method="${CSS.escape(card.dataset.method)}"] td`);
  cells.forEach((c, i) => { metrics[headers[i]] = c.textContent; });
  cards[card.dataset.method] = {summary: card.querySelector(".summary").textContent, metrics,
    items: [...card.querySelectorAll("ol.results li")].map(li => ({chunk: li.dataset.chunk, grade: +li.dataset.grade,
      passage: +li.dataset.passageGrade, word: li.querySelector(".grade.main").textContent,
      text: li.textContent}))};
}
return cards;"""
LABELS = {"ndcg": "nDCG", "rr": "MRR", "recall": "R", "hit": "hit", "precision": "P"}


@pytest.mark.slow
def test_a_question_shows_its_labels_every_methods_top_k_with_grades_leaks_and_first_stage_ranks(
        demo: Path, demo_v1: Path) -> None:
    labels = pd.read_parquet(demo_v1 / "labels.parquet")
    questions = pd.read_parquet(demo_v1 / "questions.parquet").set_index("qid")
    chunkers = sorted(path.stem for path in (demo_v1 / "qrels").glob("*.parquet") if "." not in path.stem)
    chunks_of = {c: pd.read_parquet(demo / "results" / "demo" / "corpus" / c / "chunks.parquet").set_index("chunk_id")
                 for c in chunkers}
    grades_of = {c: (q := pd.read_parquet(demo_v1 / "qrels" / f"{c}.parquet"))[q["grain"] == "chunk"].set_index(
        ["qid", "item_id"])["grade"] for c in chunkers}
    methods = sorted(path.stem for path in (demo_v1 / "runs").glob("*.parquet"))
    runs = {m: pd.read_parquet(demo_v1 / "runs" / f"{m}.parquet") for m in methods}
    metrics = {m: pd.read_parquet(demo_v1 / "metrics" / f"{m}.parquet") for m in methods}
    # A method's chunker: the one whose chunks hold every chunk it returned (the demo has section and window ones).
    chunker_of = {m: next(c for c in chunkers if runs[m]["chunk_id"].isin(chunks_of[c].index).all()) for m in methods}
    assert len(set(chunker_of.values())) > 1  # the grades below are looked up per chunker, not only on sections
    seen_grades, seen_leaks = set(), set()
    with chromium(1400, 2400) as driver:
        _open(driver, demo_v1 / "explorer.html")
        for qid in ("q012", "q014", "q020", "q041", "q047"):
            search = driver.find_element("id", "f-text")
            search.clear()
            search.send_keys(qid)
            driver.find_element("css selector", f'#qtable tr[data-qid="{qid}"] a').click()
            assert _shows(driver, qid)
            assert driver.find_element("id", "qtext").text == questions.loc[qid, "question"]
            shown = [(r.get_attribute("data-doc"), r.get_attribute("data-section"), int(r.get_attribute("data-grade")))
                     for r in driver.find_elements("css selector", "#labels tbody tr")]
            expected = labels[labels["qid"] == qid].fillna({"section": ""})
            assert sorted(shown) == sorted(map(tuple, expected[["doc_id", "section", "grade"]].values.tolist()))
            # Every method side by side.
            driver.get(driver.current_url.split("#")[0] + f"#q={qid}&show=" + ",".join(methods).replace("+", "%2B"))
            assert _eventually(driver, lambda d: sorted(d.execute_script(_DISPLAYED)) == methods)
            cards = driver.execute_script(_DISPLAYED)
            doc_grades = labels[labels["qid"] == qid].groupby("doc_id")["grade"].max().to_dict()
            public, as_of = questions.loc[qid, "audience"] == "public", questions.loc[qid, "as_of"]
            for method in methods:
                card, run = cards[method], runs[method][runs[method]["qid"] == qid].sort_values("rank")
                chunks, chunk_grades = chunks_of[chunker_of[method]], grades_of[chunker_of[method]]
                top = run[run["rank"] <= 10]
                assert [item["chunk"] for item in card["items"]] == top["chunk_id"].tolist(), (qid, method)
                for item, row in zip(card["items"], top.itertuples()):
                    grade = (doc_grades.get(row.doc_id, -1) if GRAIN == "document"
                             else int(chunk_grades.get((qid, row.chunk_id), -1)))
                    assert item["grade"] == grade
                    assert item["passage"] == int(chunk_grades.get((qid, row.chunk_id), -1))
                    assert item["word"] == ("? unjudged" if grade < 0 else
                                            f"{'✓ relevant' if grade >= 1 else '✗ non-relevant'} (grade {grade})")
                    seen_grades.add(item["word"].split(" (")[0])
                    chunk = chunks.loc[row.chunk_id]
                    staff = bool(public and chunk["audience"] == "staff")
                    outdated = bool((pd.notna(chunk["valid_from"]) and as_of < chunk["valid_from"])
                                    or (pd.notna(chunk["valid_to"]) and as_of >= chunk["valid_to"]))
                    assert ("⚠ staff-only" in item["text"], "⚠ out of date" in item["text"]) == (staff, outdated)
                    seen_leaks |= {name for name, flag in (("staff", staff), ("outdated", outdated)) if flag}
                    if "first_stage_rank" in run:
                        assert f"first stage (bm25): rank {row.first_stage_rank} ·" in item["text"]
                # The first relevant result at the report's grain, from the run itself.
                if GRAIN == "document":
                    docs = collapse_to_documents(run)
                    hits = docs[docs["doc_id"].map(lambda d: doc_grades.get(d, -1) >= 1)]  # noqa: B023 (called here)
                else:
                    hits = run[[chunk_grades.get((qid, c), -1) >= 1 for c in run["chunk_id"]]]
                if hits.empty:
                    assert "No relevant result" in card["summary"] or "Unanswerable" in card["summary"]
                elif GRAIN == "document":
                    chunk_rank = int(run[run["doc_id"] == hits.iloc[0]["doc_id"]]["rank"].min())
                    assert f"document rank {hits.iloc[0]['rank']} (passage rank {chunk_rank})" in card["summary"]
                else:
                    assert f"First relevant result: rank {int(hits['rank'].min())}." in card["summary"]
                values = metrics[method]
                values = values[(values["grain"] == GRAIN) & (values["qid"] == qid)]
                checked = 0
                for v in values.itertuples():
                    label = f"{LABELS.get(v.metric)}@{v.k}"
                    if label in card["metrics"]:
                        assert card["metrics"][label].startswith(f"{v.value:.3f}mean "), (method, label)
                        checked += 1
                assert checked == (20 if questions.loc[qid, "kind"] != "unanswerable" else 0)
            _no_errors(driver)
        driver.get("about:blank")
        driver.set_window_size(1400, 1300)
        _open(driver, demo_v1 / "explorer.html", "#q=q014&show=bm25,bm25%2Brerank-e5%5Bdepth%3D30%5D")
        driver.execute_script("document.getElementById('side-heading').scrollIntoView()")
        driver.save_screenshot(str(SHOTS / "explorer-question.png"))
    assert seen_grades == {"✓ relevant", "✗ non-relevant", "? unjudged"} and seen_leaks == {"staff", "outdated"}


@pytest.mark.slow
def test_a_mean_links_to_its_cell_of_the_comparison_page(demo_v1: Path) -> None:
    with chromium(1200, 800) as driver:
        for method, label in ((PAIR[0], "nDCG@10"), ("bm25-rm3", "MRR@10"), ("dense-e5", "hit@1")):
            _open(driver, demo_v1 / "explorer.html", "#q=q001")
            header = [h.text for h in driver.find_elements("css selector", "#metrics thead th")]
            cell = driver.find_elements("css selector", f'#metrics tr[data-method="{method}"] td')[
                header.index(label) - 1]
            link = cell.find_element("css selector", "a.cellmean")
            mean = link.text.removeprefix("mean ")
            link.click()
            time.sleep(0.5)  # the scroll to a text fragment follows the load
            assert driver.current_url.split("#")[0].endswith("/comparison.html")
            where = driver.execute_script("""
                const [method, label] = arguments;
                const heading = [...document.querySelectorAll("h2")]
                    .find(h => h.textContent === `All questions, ${arguments[2]} grain`);
                let table = heading.nextElementSibling;  // a table, or the box it scrolls sideways in
                while (table.tagName !== "TABLE" && !table.querySelector("table")) table = table.nextElementSibling;
                if (table.tagName !== "TABLE") table = table.querySelector("table");
                const column = [...table.tHead.rows[0].cells].findIndex(c => c.textContent === label);
                const row = [...table.tBodies[0].rows].find(r => r.cells[0].textContent === method);
                const rect = row.cells[column].getBoundingClientRect();
                return [row.cells[column].textContent, rect.top, rect.bottom, window.innerHeight, window.scrollY];""",
                method, label, GRAIN)
            text, top, bottom, height, scrolled = where
            assert text == mean and scrolled > 0 and top >= 0 and bottom <= height, (method, label, where)


@pytest.mark.slow
def test_keyboard_alone_walks_the_list_and_a_narrow_window_never_scrolls_sideways(demo_v1: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    with chromium(1200, 900) as driver:
        _open(driver, demo_v1 / "explorer.html")
        body = driver.find_element("tag name", "body")
        body.send_keys("/")
        assert driver.switch_to.active_element.get_attribute("id") == "f-text"
        driver.switch_to.active_element.send_keys("zzz")  # no question id or text has it
        assert driver.find_element("id", "count").text.startswith("No question matches")
        driver.find_element("id", "f-text").clear()
        driver.find_element("id", "f-text").send_keys(" ")  # input event: back to every question
        _select(driver, "f-kind", "exact-code")
        expected = [r.get_attribute("data-qid") for r in driver.find_elements("css selector", "#qtable tbody tr")]
        body.send_keys("n")
        assert _shows(driver, expected[0])
        driver.switch_to.active_element.send_keys("n")
        assert _shows(driver, expected[1])
        driver.switch_to.active_element.send_keys("p")
        assert _shows(driver, expected[0])
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        assert driver.switch_to.active_element.text == expected[0]
        driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        assert driver.switch_to.active_element.text == expected[1]
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        assert _shows(driver, expected[1])
        assert driver.switch_to.active_element.get_attribute("id") == "detail"
        _no_errors(driver)
    with chromium(400, 900) as driver:
        _open(driver, demo_v1 / "explorer.html", "#q=q014&show=bm25,dense-e5")
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        cards = driver.find_elements("css selector", "section.method")
        assert len(cards) == 2 and cards[0].rect["x"] == cards[1].rect["x"]  # stacked, not side by side
        driver.execute_script("document.getElementById('side-heading').scrollIntoView()")
        driver.save_screenshot(str(SHOTS / "explorer-narrow.png"))
