"""Explorer page size and time to open in headless Chromium, at demo, SciFact and 10,000-question sizes.

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_explorer.py [--demo results/demo/v1/explorer.html]
Synthetic versions go through the real library (qrels, per-query metrics, aggregate, failure analysis, payload);
each page is opened in the same browser as an empty page (the reference), and the ratio of the open times printed,
then the time to render one question. Needs Debian's chromium and chromium-driver and selenium (the test extra).
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rankbench.analysis.failures import analyse
from rankbench.evaluation.scoring import aggregate, evaluate_run
from rankbench.io.qrels import build_qrels
from rankbench.report.explorer import ExplorerSettings, explorer_html, explorer_payload

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from explorer_helpers import browser_missing, chromium

KS = (1, 3, 5, 10)
DEPTH = 100
WORDS = np.array("cell protein gene expression risk patients study effect trial dose mouse model acid signal "
                 "receptor tumour blood level increase reduce associated response treatment human".split())


def _text(rng: np.random.Generator, n: int, words: int) -> list[str]:
    picks = WORDS[rng.integers(0, len(WORDS), (n, words))]
    return [" ".join(row) for row in picks]


def synthetic(n_questions: int, n_methods: int, n_docs: int, seed: int = 0) -> tuple[list, ExplorerSettings]:
    """A version of n_questions over n_docs one-chunk documents (SciFact-like), ranked by n_methods methods (one a
    reranker): 3 labels a question (grades 0-3), relevant documents put near the top more or less often."""
    rng = np.random.default_rng(seed)
    docs = np.array([f"d{i:06d}" for i in range(n_docs)], dtype=object)
    chunks = pd.DataFrame({"chunk_id": docs + "#_intro", "doc_id": docs, "sections": [["_intro"]] * n_docs,
                           "title": _text(rng, n_docs, 8), "text": _text(rng, n_docs, 180),
                           "audience": "public", "valid_from": None, "valid_to": None})
    qids = np.array([f"q{i:05d}" for i in range(n_questions)], dtype=object)
    kinds = np.array(["answerable", "paraphrase", "exact-code", "multi-passage", "unanswerable"], dtype=object)
    questions = pd.DataFrame({"qid": qids, "question": _text(rng, n_questions, 12),
                              "kind": kinds[rng.integers(0, len(kinds), n_questions)], "audience": "public",
                              "as_of": None})
    labelled = qids[questions["kind"] != "unanswerable"]
    label_docs = rng.choice(n_docs, (len(labelled), 3), replace=True)
    labels = pd.DataFrame({"qid": np.repeat(labelled, 3), "doc_id": docs[label_docs.ravel()], "section": None,
                           "grade": np.tile([3, 1, 0], len(labelled))}).drop_duplicates(["qid", "doc_id"])
    label_of = dict(zip(labelled, label_docs[:, 0]))
    methods = [f"method-{i:02d}" for i in range(n_methods - 1)] + ["method-00+rerank"]
    runs, specs = {}, {}
    for m, method in enumerate(methods):
        items = rng.integers(0, n_docs, (n_questions, DEPTH * 2))
        rows = []
        for q, qid in enumerate(qids):
            ranked = list(dict.fromkeys(items[q].tolist()))[:DEPTH]
            if qid in label_of and rng.random() < 0.4 + 0.04 * m:
                ranked.insert(int(rng.geometric(0.4)) - 1, int(label_of[qid]))
                ranked = list(dict.fromkeys(ranked))[:DEPTH]
            rows.append(ranked)
        flat = np.concatenate(rows)
        counts = [len(r) for r in rows]
        ranks = np.concatenate([np.arange(1, c + 1) for c in counts])
        run = pd.DataFrame({"qid": np.repeat(qids, counts), "rank": ranks,
                            "chunk_id": chunks["chunk_id"].to_numpy()[flat], "doc_id": docs[flat]})
        run["score"] = 1.0 / (run["rank"] + 1.0)
        if method.endswith("+rerank"):
            run["first_stage_rank"] = rng.integers(1, 31, len(run))
            specs[method] = {"type": "rerank", "input": methods[0], "depth": 30}
        else:
            specs[method] = {"type": "dense", "encoder": "e5"}
        runs[method] = run
    qrels, _ = build_qrels(labels, chunks)
    metrics = {m: evaluate_run(run, questions, qrels, KS) for m, run in runs.items()}
    summary, _ = aggregate(metrics, questions, "synthetic", "test", n_resamples=200, seed=0, baseline=methods[0])
    failures = analyse(runs, specs, {m: qrels for m in runs}, questions, labels,
                       dict(zip(chunks["doc_id"], chunks["title"])), "document", max(KS))
    settings = ExplorerSettings(dataset="synthetic", qset="test", sha256="0" * 64, grain="document", ks=KS,
                                headline=(("ndcg", 10), ("rr", 10), ("recall", 10), ("hit", 1)),
                                relevance_threshold=1, alpha=0.05, ci=False, baseline=methods[0])
    args = [questions, labels, {"whole": chunks}, runs, metrics, {"whole": qrels}, failures, summary, specs,
            {m: "whole" for m in runs}, settings]
    return args, settings


def open_times(driver, page: Path, repeats: int) -> tuple[float, float]:
    """Median wall seconds of driver.get (returns after the load event, so after the first render) and the
    median in-page time to the end of the first render (performance.now(); 0 for a page that does not say)."""
    walls, ready = [], []
    for _ in range(repeats):
        driver.get("about:blank")
        start = time.perf_counter()
        driver.get(page.as_uri())
        walls.append(time.perf_counter() - start)
        ready.append(float(driver.execute_script("return document.documentElement.dataset.ready || 0")))
    return statistics.median(walls), statistics.median(ready) / 1000


def question_time(driver, page: Path, qid: str) -> float:
    """Seconds to render one question with every method side by side (hash change to the end of the render)."""
    driver.get(page.as_uri())
    return driver.execute_script("""
        const start = performance.now();
        const show = M.map(m => encodeURIComponent(m.name)).join(",");
        location.hash = "q=" + encodeURIComponent(arguments[0]) + "&show=" + show;
        dispatchEvent(new HashChangeEvent("hashchange"));
        return (performance.now() - start) / 1000;""", qid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--demo", type=Path, help="an explorer.html made by the workflow (e.g. the demo's v1)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="300x12:5183,10000x12:50000",
                        help="questions x methods : documents, comma-separated")
    args = parser.parse_args()
    reason = browser_missing()
    if reason:
        sys.exit(f"bench_explorer: {reason}")
    os.environ.pop("CI", None)
    out = Path(tempfile.mkdtemp(prefix="bench-explorer-"))
    empty = out / "empty.html"
    empty.write_text("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>empty</title></head>"
                     "<body></body></html>\n")
    pages = []
    if args.demo:
        pages.append(("demo (workflow)", args.demo.resolve(), None))
    for size in args.sizes.split(","):
        shape, n_docs = size.split(":")
        n_questions, n_methods = map(int, shape.split("x"))
        start = time.perf_counter()
        inputs, _ = synthetic(n_questions, n_methods, int(n_docs))
        prepared = time.perf_counter() - start
        start = time.perf_counter()
        payload = explorer_payload(*inputs)
        page = out / f"explorer-{n_questions}x{n_methods}.html"
        page.write_text(explorer_html(payload), encoding="utf-8")
        built = time.perf_counter() - start
        pages.append((f"{n_questions} q × {n_methods} methods (top {payload['k']} shown, "
                      f"{len(payload['metrics'])} metrics)", page, (prepared, built, payload["questions"]["qid"][0])))
    with chromium(1400, 1000) as driver:
        reference, _ = open_times(driver, empty, args.repeats)
        print(f"reference: empty page opens in {reference * 1000:.1f} ms (median of {args.repeats})")
        print("| page | size | gzip | build s | open ms | first render ms | ratio to empty | one question ms |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, page, extra in pages:
            wall, ready = open_times(driver, page, args.repeats)
            data = page.read_bytes()
            qid = extra[2] if extra else "q001"
            one = question_time(driver, page, qid)
            build = f"{extra[1]:.2f} (+{extra[0]:.0f} inputs)" if extra else "–"
            print(f"| {name} | {len(data) / 1e6:.2f} MB | {len(gzip.compress(data)) / 1e6:.2f} MB | {build} | "
                  f"{wall * 1000:.0f} | {ready * 1000:.0f} | {wall / reference:.1f}× | {one * 1000:.0f} |")


if __name__ == "__main__":
    main()
