"""A tiny hand-made question set for the explorer (every grade, leak and failure class), and headless Chromium."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
import pytest

from rankbench.analysis.failures import analyse
from rankbench.evaluation.evaluate import aggregate, evaluate_run
from rankbench.io.qrels import build_qrels
from rankbench.report.explorer import ExplorerSettings

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
SETTINGS = ExplorerSettings(dataset="tiny", qset="v1", sha256="0" * 64, grain="document", ks=(1, 3),
                            headline=(("ndcg", 3), ("hit", 1)), relevance_threshold=1, alpha=0.05, ci=False,
                            baseline="bm25")


def _run(rows: list[tuple], first_stage: bool = False) -> pd.DataFrame:
    columns = ["qid", "rank", "chunk_id", "doc_id", "score"] + (["first_stage_rank"] if first_stage else [])
    return pd.DataFrame(rows, columns=columns)


def tiny_inputs(question_text: str = "Where is the deposit?") -> dict[str, Any]:
    """Four questions, three methods (a reranker among them) over five chunks: A (two sections), B staff-only,
    C out of date on 2025-06-01, D public; q1 public with a grade-0 label, q3 unanswerable, q4 staff."""
    chunks = pd.DataFrame({
        "chunk_id": ["A#a1", "A#a2", "B#b1", "C#c1", "D#d1"], "doc_id": ["A", "A", "B", "C", "D"],
        "sections": [["a1"], ["a2"], ["b1"], ["c1"], ["d1"]], "title": ["Doc A", "Doc A", "Doc B", "Doc C", "Doc D"],
        "text": ["Alpha one " * 40, "Alpha two", "Beta", "Gamma  old\ntext", "Delta"],
        "audience": ["public", "public", "staff", "public", "public"],
        "valid_from": [None, None, None, "2020-01-01", None], "valid_to": [None, None, None, "2024-01-01", None]})
    questions = pd.DataFrame({
        "qid": ["q1", "q2", "q3", "q4"], "question": [question_text, "Code E-1?", "Unknown?", "Staff rule?"],
        "kind": ["answerable", "exact-code", "unanswerable", "staff-only"],
        "audience": ["public", "public", "public", "staff"], "as_of": ["2025-06-01"] * 4})
    labels = pd.DataFrame({"qid": ["q1", "q1", "q2", "q4"], "doc_id": ["A", "D", "C", "B"],
                           "section": ["a1", None, "c1", "b1"], "grade": [3, 0, 2, 2]})
    runs = {
        "bm25": _run([("q1", 1, "A#a2", "A", 9.5), ("q1", 2, "A#a1", "A", 9.0), ("q1", 3, "D#d1", "D", 8.0),
                      ("q1", 4, "B#b1", "B", 7.0), ("q2", 1, "B#b1", "B", 3.0), ("q2", 2, "D#d1", "D", 2.0),
                      ("q2", 3, "C#c1", "C", 1.0), ("q3", 1, "A#a1", "A", 1.0), ("q4", 1, "B#b1", "B", 5.0),
                      ("q4", 2, "A#a1", "A", 4.0)]),
        "dense": _run([("q1", 1, "A#a1", "A", 0.9), ("q1", 2, "D#d1", "D", 0.8), ("q2", 1, "C#c1", "C", 0.7),
                       ("q3", 1, "D#d1", "D", 0.6), ("q4", 1, "A#a2", "A", 0.5)]),
        "rerank": _run([("q1", 1, "A#a1", "A", 0.9, 2), ("q1", 2, "A#a2", "A", 0.8, 1), ("q2", 1, "D#d1", "D", 0.7, 2),
                        ("q2", 2, "B#b1", "B", 0.6, 1), ("q3", 1, "A#a1", "A", 0.5, 1),
                        ("q4", 1, "A#a1", "A", 0.9, 2), ("q4", 2, "B#b1", "B", 0.1, 1)], first_stage=True),
    }
    specs = {"bm25": {"type": "bm25"}, "dense": {"type": "dense", "encoder": "e5"},
             "rerank": {"type": "rerank", "input": "bm25", "depth": 2}}
    qrels, _ = build_qrels(labels, chunks)
    metrics = {m: evaluate_run(run, questions, qrels, SETTINGS.ks) for m, run in runs.items()}
    summary, pairs = aggregate(metrics, questions, "tiny", "v1", n_resamples=200, seed=0, baseline="bm25")
    titles = pd.Series({"A": "Doc A", "B": "Doc B", "C": "Doc C", "D": "Doc D"})
    failures = analyse(runs, specs, {m: qrels for m in runs}, questions, labels, titles, "document", max(SETTINGS.ks))
    return {"questions": questions, "labels": labels, "chunks": {"sections": chunks}, "runs": runs,
            "metrics": metrics, "qrels": {"sections": qrels}, "failures": failures, "aggregate": summary,
            "specs": specs, "chunker_of": {m: "sections" for m in runs}, "settings": SETTINGS, "pairs": pairs}


def payload_args(inputs: dict[str, Any]) -> list[Any]:
    """explorer_payload's positional arguments from tiny_inputs()."""
    return [inputs[name] for name in ("questions", "labels", "chunks", "runs", "metrics", "qrels", "failures",
                                      "aggregate", "specs", "chunker_of", "settings")]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        return (f"{' and '.join(missing)} missing: apt-get install chromium chromium-driver "
                "(docs/concepts/report.md: The explorer)")
    return None


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """Headless Debian Chromium through its own chromedriver (Selenium Manager never downloads anything); skips
    when the browser is absent, except in CI (CI=true), where .ci/run installs it and absence is a failure."""
    reason = browser_missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run in CI: {reason}")
        pytest.skip(reason)
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="rankbench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + (f"--user-data-dir={profile}",):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.set_window_size(width, height)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
