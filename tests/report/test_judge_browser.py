"""`rankbench judge` in a real browser (headless Debian Chromium): the demo's pool judged by keyboard with an
evidence quote selected by mouse, the server killed (-9) and restarted, the labels frozen into a new version that
`check` and a workflow run accept and score at the evidence grain; hostile documents shown as text; requests from
another origin refused and nothing loaded from elsewhere."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
import yaml
from explorer_helpers import chromium
from workflow_helpers import REPO, snakemake

from rankbench.corpus.sections import split_sections

SHOTS = REPO / "results" / "judge-screenshots"


def _rankbench(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rankbench.cli", *args, "--config", str(project / "config.yaml"),
                           "--directory", str(project)], capture_output=True, text=True, timeout=300)


def _serve(project: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """The judge server started on a free port, and its URL (read from what it prints)."""
    process = subprocess.Popen([sys.executable, "-m", "rankbench.cli", "judge", "--config",
                                str(project / "config.yaml"), "--directory", str(project), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("Serving "):
            return process, line.split()[1]
    process.kill()
    raise AssertionError(process.stderr.read() if process.stderr else "no URL printed")


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(10)


def _wait(driver, script: str, timeout: float = 15):
    """The value of a script once truthy (the page loads and saves asynchronously)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script))


def _press(driver, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(keys).perform()


def _saved(driver, count: int) -> None:
    _wait(driver, f"return document.getElementById('progress').textContent.startsWith('judged {count}/')")


def _current(driver) -> int:
    return int(driver.execute_script("return document.querySelector('.card.current').dataset.index"))


def _drag_select(driver, card: int, quote_from: int, quote_to: int) -> str:
    """Select characters [quote_from, quote_to) of a card's passage by a real mouse drag (press at the first
    character's left edge, release at the last one's right edge); the text the browser selected."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    driver.execute_script("document.querySelectorAll('.card')[arguments[0]].scrollIntoView({block: 'center'})", card)
    rects = driver.execute_script("""
        const node = document.querySelectorAll('.card')[arguments[0]].querySelector('.passage').firstChild;
        const box = (i) => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                             const b = r.getClientRects()[0]; return [b.left, b.right, (b.top + b.bottom) / 2]; };
        return [box(arguments[1]), box(arguments[2] - 1)];""", card, quote_from, quote_to)
    (left, _, top), (_, right, bottom) = rects
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(int(left) + 1, int(top)).pointer_down()
    actions.pointer_action.move_to_location(int(right) - 1, int(bottom)).pointer_up()
    actions.perform()
    return str(driver.execute_script("return window.getSelection().toString()"))


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_judge_three_passages_survive_kill_9_and_freeze_a_version_scored_at_evidence_grain(
        demo: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    # v7: a name no other test of the shared demo writes (test_workflow adds a v4 there)
    shutil.copytree(demo, project, ignore=shutil.ignore_patterns(".snakemake", "logs"))
    lock_before = json.loads((project / "data/demo/questions/frozen.lock").read_text())
    v3_before = (project / "data/demo/questions/v3.jsonl").read_bytes()
    process, url = _serve(project, "--qset", "v3", "--judge", "alice")
    log = project / "judgments" / "v3" / "alice.jsonl"
    try:
        with chromium() as driver:
            driver.get(url)
            _wait(driver, "return document.querySelectorAll('.card').length > 2")
            passage = driver.execute_script("return document.querySelector('.card .passage').textContent")
            # a quote of the first body line, chosen by a mouse drag, marked with `e`, then graded 2 by keyboard
            line_start = passage.index("\n") + 1
            words = passage[line_start:].split(" ")
            wanted = " ".join(words[:6])
            selected = _drag_select(driver, 0, line_start, line_start + len(wanted))
            assert selected.strip() and selected in passage, selected
            _press(driver, "e")
            _wait(driver, "return document.querySelector('.card mark') !== null")
            _press(driver, "2")
            _saved(driver, 1)
            assert _current(driver) == 1
            _press(driver, "0")
            _saved(driver, 2)
            driver.save_screenshot(str(tmp_path / "judging.png"))
        first = _events(log)[0]
        assert first["grade"] is None and first["evidence"]["quote"] == selected
        os.kill(process.pid, signal.SIGKILL)  # mid-way: two of three passages judged
        process.wait(10)
        process, url = _serve(project, "--qset", "v3", "--judge", "alice")
        with chromium() as driver:
            driver.get(url)
            _wait(driver, "return document.getElementById('status').textContent.startsWith('Resumed')")
            assert _current(driver) == 2
            assert driver.execute_script("return document.getElementById('progress').textContent").startswith(
                "judged 2/")
            assert driver.execute_script("return document.querySelector('.card mark').textContent") == selected
            _press(driver, "0")
            _saved(driver, 3)
            SHOTS.mkdir(parents=True, exist_ok=True)
            driver.execute_script("window.scrollTo(0, 0)")
            driver.save_screenshot(str(SHOTS / "judge.png"))
    finally:
        _stop(process)
    latest = {(e["qid"], e["chunk_id"]): e for e in _events(log)}
    assert sorted(e["grade"] for e in latest.values()) == [0, 0, 2]
    evidence = next(e for e in latest.values() if e["grade"] == 2)["evidence"]
    frozen = _rankbench(project, "judge", "--qset", "v3", "--freeze", "--version", "v7")
    assert frozen.returncode == 0, frozen.stderr
    lines = frozen.stdout.split("Add to `qsets` in config.yaml:\n")[1]
    config = yaml.safe_load((project / "config.yaml").read_text())
    config["qsets"].update(yaml.safe_load(lines))
    (project / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert (project / "data/demo/questions/v3.jsonl").read_bytes() == v3_before
    lock = json.loads((project / "data/demo/questions/frozen.lock").read_text())
    assert {k: lock[k] for k in lock_before} == lock_before and "v7" in lock
    checked = _rankbench(project, "check", "--version", "v7")
    assert checked.returncode == 0 and "v7: 58 questions" in checked.stdout, checked.stderr
    judged = next(e for e in latest.values() if e["grade"] == 2)
    run = snakemake(project, "--cores", "2", "results/demo/v7/evidence/bm25.parquet")
    assert run.returncode == 0, run.stderr[-3000:]
    labels = pd.read_parquet(project / "results/demo/v7/labels.parquet")
    new = labels[(labels["qid"] == judged["qid"]) & (labels["grade"] == 2) & (labels["doc_id"] == judged["doc_id"])]
    assert (int(new["evidence_start"].iloc[0]), int(new["evidence_end"].iloc[0])) == (evidence["start"],
                                                                                         evidence["end"])
    qid = judged["qid"]
    scores = {}
    for version in ("v3", "v7"):
        frame = pd.read_parquet(project / f"results/demo/{version}/evidence/bm25.parquet")
        scores[version] = frame[(frame["qid"] == qid) & (frame["k"] == 10)].set_index("metric")["value"]
    assert len(scores["v7"]) == 3  # the question is scored at the evidence grain
    run_v4 = pd.read_parquet(project / "results/demo/v7/runs/bm25.parquet")
    top = set(run_v4[(run_v4["qid"] == qid) & (run_v4["rank"] <= 10)]["chunk_id"])
    if judged["chunk_id"] in top:  # bm25 sends the passage: its new evidence characters count
        assert scores["v7"]["evidence_precision"] > scores["v3"]["evidence_precision"]


def _tiny_project(folder: Path, text: str) -> Path:
    """A one-document project with its results laid out as the workflow writes them (no workflow run)."""
    sections = [s for s in split_sections(text) if s.body]
    chunk_ids = [f"d#{s.section_id}" for s in sections]
    corpus = folder / "results" / "tiny" / "corpus"
    (corpus / "sections").mkdir(parents=True)
    pd.DataFrame({"doc_id": ["d"], "title": ["Hostile"], "text": [text]}).to_parquet(corpus / "documents.parquet")
    pd.DataFrame({"chunk_id": chunk_ids, "doc_id": "d", "sections": [[s.section_id] for s in sections],
                  "title": "Hostile", "text": [s.body for s in sections], "start": [s.start for s in sections],
                  "end": [s.end for s in sections]}).to_parquet(corpus / "sections" / "chunks.parquet")
    version = folder / "results" / "tiny" / "v1"
    (version / "runs").mkdir(parents=True)
    (version / "qrels").mkdir()
    pd.DataFrame({"qid": "q1", "rank": range(1, len(sections) + 1), "chunk_id": chunk_ids, "doc_id": "d",
                  "score": 1.0}).to_parquet(version / "runs" / "m.parquet")
    pd.DataFrame({"qid": ["q1"], "question": ["<b>Which?</b>"]}).to_parquet(version / "questions.parquet")
    pd.DataFrame({"grain": ["chunk"], "qid": ["q1"], "item_id": ["none"], "grade": [1]}).to_parquet(
        version / "qrels" / "sections.parquet")
    (folder / "data").mkdir()
    (folder / "data" / "v1.jsonl").write_text(json.dumps({"qid": "q1", "question": "Which?", "labels": []}) + "\n")
    config = {"dataset": {"name": "tiny", "format": "native", "corpus": "data/corpus.jsonl",
                          "lock": "data/frozen.lock"}, "qsets": {"v1": {"path": "data/v1.jsonl"}},
              "chunker": "sections"}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


HOSTILE = ("## Script\nBefore <script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\"> after.\n"
           "## Big\n" + ("word " * 1_048_576) + "END of the big one.\n"
           "## Mixed\nمرحبا بالعالم، هذا نص عربي. Cafe\u0301 na\u0308ive 🚲 עברית.\n")


def _select_js(driver, card: int, start16: int, end16: int) -> None:
    """Select UTF-16 offsets [start16, end16) of a card's passage (across its text nodes: a mark splits them)."""
    driver.execute_script("""
        const passage = document.querySelectorAll('.card')[arguments[0]].querySelector('.passage');
        const at = (offset) => {
          const walker = document.createTreeWalker(passage, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            if (offset <= node.length) return [node, offset];
            offset -= node.length;
          }
        };
        const range = document.createRange(); range.setStart(...at(arguments[1])); range.setEnd(...at(arguments[2]));
        const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range);""", card, start16, end16)


def _token(url: str) -> str:
    page = urllib.request.urlopen(url).read().decode()
    return re.search(r'"token": "([^"]+)"', page)[1]


def _post(url: str, body: dict, headers: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url + "api/judge", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


@pytest.mark.slow
def test_hostile_passages_are_text_selectable_and_their_quotes_round_trip(tmp_path: Path) -> None:
    project = _tiny_project(tmp_path, HOSTILE)
    process, url = _serve(project, "--qset", "v1", "--judge", "bob")
    log = project / "judgments" / "v1" / "bob.jsonl"
    try:
        with chromium() as driver:
            driver.get(url)
            _wait(driver, "return document.querySelectorAll('.card').length === 3")
            texts = driver.execute_script("return [...document.querySelectorAll('.passage')].map(p => p.textContent)")
            sections = [s for s in split_sections(HOSTILE) if s.body]
            assert texts == [HOSTILE[s.start:s.end] for s in sections]  # the 5 MB one whole, as text
            assert driver.execute_script("return window.pwned === undefined && "
                                         "document.querySelectorAll('main script, main img').length === 0")
            assert driver.find_element("id", "question").text == "q1: <b>Which?</b>"
            quotes = ["<script>window.pwned = 1</script>", "word END of the big one.", "مرحبا بالعالم",
                      "Cafe\u0301 na\u0308ive 🚲 עברית."]
            cards = [0, 1, 2, 2]
            for count, (card, quote) in enumerate(zip(cards, quotes), start=1):
                low = texts[card].index(quote) if card != 1 else texts[card].rindex(quote)
                units = lambda s: len(s.encode("utf-16-le")) // 2  # noqa: E731
                _select_js(driver, card, units(texts[card][:low]), units(texts[card][:low + len(quote)]))
                _press(driver, "e")
                _wait(driver, f"return document.querySelectorAll('.card')[{card}].querySelector('mark')?.textContent "
                      f"=== {json.dumps(quote)}")
                assert len(_events(log)) == count
                stored = _events(log)[-1]["evidence"]
                assert stored["quote"] == quote and HOSTILE[stored["start"]:stored["end"]] == quote
            resources = driver.execute_script(
                "return performance.getEntriesByType('resource').map(r => r.name)")
            origin = url.rstrip("/")
            assert resources and all(name.startswith(origin + "/api/") for name in resources), resources
            assert not [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        page = urllib.request.urlopen(url).read().decode()
        assert "http://" not in page and "https://" not in page and "//" not in page.split("<script")[0]
        token = _token(url)
        body = {"qid": "q1", "chunk_id": "d#script", "grade": 3, "seen": 0}
        before = log.read_bytes()
        assert _post(url, body, {"X-Rankbench-Token": token, "Origin": "http://evil.example"})[0] == 403
        assert _post(url, body, {"Origin": url.rstrip("/")})[0] == 403  # no token
        assert _post(url, body, {"X-Rankbench-Token": token, "Host": "evil.example"})[0] == 403  # DNS rebinding
        preflight = urllib.request.Request(url + "api/judge", method="OPTIONS",
                                           headers={"Origin": "http://evil.example",
                                                    "Access-Control-Request-Method": "POST"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(preflight)
        assert refused.value.code == 403
        assert not any(h.lower().startswith("access-control") for h in refused.value.headers)
        assert log.read_bytes() == before
        status, headers = _post(url, {**body, "seen": 0}, {"X-Rankbench-Token": token,
                                                            "Origin": url.rstrip("/")})
        assert status == 409 and "default-src 'none'" in headers["Content-Security-Policy"]
    finally:
        _stop(process)
