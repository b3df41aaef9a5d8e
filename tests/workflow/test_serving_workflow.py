"""The serving probe through the real workflow: on the demo (v3), dense-e5's served p50 is at least what its model
takes to encode one question in this process (no cache), the reranker at depth 30 is not cheaper than at depth 20
beyond the CI, the table has the issue's columns and the page names the machine; a search service's served latency
is what the service itself logged for the same requests; the probe stays off the comparison page."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from http_servers import TimedSearchServer, timed_search  # noqa: F401 (a fixture)
from workflow_helpers import copy_dataset, snakemake

from rankbench.io.files import parquet_metadata
from rankbench.records.serving import SERVING_COLUMNS

pytestmark = pytest.mark.slow
BASE = Path("results/demo")
MINI = Path("tests/fixtures/mini")


def served_cells(page: str) -> dict[str, dict[str, str]]:
    """The Served table of a cost page: method -> column -> cell."""
    section = page.split("## Served: what a question costs at query time")[1].split("\n## ")[0]
    header, _, *rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
                        for line in section.splitlines() if line.startswith("|")]
    return {row[0].strip("` ‡"): dict(zip(header, row)) for row in rows}


def test_the_demo_s_serving_table_has_every_method_timed_by_the_probe(demo: Path) -> None:
    serving = pd.read_parquet(demo / BASE / "v3/serving.parquet")
    config = yaml.safe_load((demo / "config.yaml").read_text())
    questions = pd.read_parquet(demo / BASE / "v3/questions.parquet")
    assert list(serving.columns) == SERVING_COLUMNS
    assert (serving["measured"] == "probe").all() and (serving["questions_timed"] == len(questions)).all()
    assert (serving["threads"] == 1).all() and serving["qps_batch"].gt(0).all() and serving["startup_s"].gt(0).all()
    assert len(serving) == len(set(serving["method"])) >= len(config["methods"])
    for p in (50, 95, 99):
        assert (serving[f"p{p}_ms_low"] <= serving[f"p{p}_ms"]).all()
        assert (serving[f"p{p}_ms"] <= serving[f"p{p}_ms_high"]).all()
    machine = parquet_metadata(demo / BASE / "v3/serving.parquet")["machine"]
    cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
               if line.startswith("model name"))
    page = (demo / BASE / "v3/cost.md").read_text()
    assert machine["cpu"] == cpu and f"Measured on {cpu} (" in page and "1 thread used" in page
    assert f"all {len(questions)} questions of the version timed (`cost.probe_questions` asks for 100" in page
    assert "These figures hold for that machine" in page


def test_dense_e5_s_served_p50_is_at_least_one_question_s_encoding_by_its_model(demo: Path) -> None:
    """The old page said 0.025 ms for dense-e5 (cached query vectors, batch shares); its model alone takes more than
    that to encode one question. The reference: the least CPU time of five single-question encodes in this thread,
    the model called directly (no cache) on one thread as in the probe. CPU time, not wall time: a question served
    cannot take less wall time than the work of its encoding. This thread's time only (what the encode did), and
    half of it as the bound: the same work takes more CPU time while the other core's process shares the caches and
    the memory bus, and the two are measured at different moments (on CI's two cores, 27 ms served against 37-43 ms
    here, measured while the SciFact test ran beside it; 31-34 ms on an idle machine); the old page was 1,000x below."""
    from rankbench.execution.threads import limit_threads, usable_cpus
    from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder

    config = yaml.safe_load((demo / "config.yaml").read_text())
    model = load_encoder(encoder_spec(config["encoders"]["e5"]))
    question = pd.read_parquet(demo / BASE / "v3/questions.parquet")["question"].iloc[0]
    limit_threads(1)
    try:
        model.encode_queries([question])  # warm, as the probe is
        took = []
        for _ in range(5):
            started = time.thread_time()
            model.encode_queries([question])
            took.append(1000 * (time.thread_time() - started))
    finally:
        limit_threads(usable_cpus())
    serving = pd.read_parquet(demo / BASE / "v3/serving.parquet").set_index("method")
    assert serving.at["dense-e5", "p50_ms"] >= min(took) / 2, (serving.at["dense-e5", "p50_ms"], took)
    assert min(took) > 1.0  # an encoding that is work, not a lookup (the old page's 0.025 ms)
    cells = served_cells((demo / BASE / "v3/cost.md").read_text())
    assert float(cells["dense-e5"]["p50 ms [95% CI]"].split()[0]) >= min(took) / 2 * 0.99  # the page rounds


def test_the_reranker_at_depth_30_is_not_cheaper_than_at_depth_20_beyond_the_ci(demo: Path) -> None:
    serving = pd.read_parquet(demo / BASE / "v3/serving.parquet").set_index("method")
    deep, shallow = serving.loc["bm25+rerank-e5[depth=30]"], serving.loc["bm25+rerank-e5[depth=20]"]
    for p in (50, 95):
        assert deep[f"p{p}_ms_high"] >= shallow[f"p{p}_ms_low"], (p, deep, shallow)
    # both pay their first stage and the question's encoding: neither can be cheaper than bm25 alone
    assert deep["p50_ms"] > serving.at["bm25", "p50_ms"] and shallow["p50_ms"] > serving.at["bm25", "p50_ms"]


def test_the_comparison_page_shows_nothing_timed(demo: Path) -> None:
    comparison = (demo / BASE / "v3/comparison.md").read_text()
    assert "Served" not in comparison and "serving" not in comparison and " ms p95" not in comparison


def test_a_search_service_s_served_latency_is_what_its_server_logged(tmp_path: Path,
                                                                      timed_search: type[TimedSearchServer]  # noqa: F811
                                                                      ) -> None:
    """A real server on localhost that works 20–60 ms a query (by the query's length) and logs each request's
    seconds: the cost page's p50 and p95 of the method are the server's own for the probe's one-at-a-time requests,
    plus at most the loopback's overhead; a fusion over it pays at least as much."""
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    documents = {json.loads(line)["doc_id"]: json.loads(line)["text"]
                 for line in (workdir / MINI / "corpus.jsonl").read_text().splitlines() if line.strip()}
    server = timed_search(documents, lambda query: 0.02 + 0.01 * (len(query) % 5))
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["methods"] = {"bm25": {"type": "bm25"},
                         "svc": {"type": "http", "url": f"{server.origin}/search", "params": {"q": "{query}",
                                                                                              "k": "{hits}"},
                                 "ids": "hits[*].id", "scores": "hits[*].score"},
                         "fused": {"type": "rrf", "inputs": ["bm25", "svc"]}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--cores", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    base = workdir / "results" / "mini" / "v1"
    n = len(pd.read_parquet(base / "questions.parquet"))
    # the run asked each question once; the probe: a warm-up, each question alone, then all of them as a batch
    assert len(server.log) == n + 1 + 2 * n
    alone = np.array([seconds for _, seconds in server.log[-2 * n:-n]]) * 1000
    serving = pd.read_parquet(base / "serving.parquet").set_index("method")
    assert serving.at["svc", "measured"] == "probe" and serving.at["svc", "questions_timed"] == n
    cells = served_cells((base / "cost.md").read_text())
    for p in (50, 95):
        logged = float(np.percentile(alone, p))
        shown = float(cells["svc"][f"p{p} ms [95% CI]"].split()[0])
        assert logged - 0.05 <= shown <= logged + 15, (p, shown, logged)  # the page's rounding; localhost's overhead
    assert serving.at["fused", "p50_ms"] >= serving.at["svc", "p50_ms"]
    assert re.search(r"\| `?svc`? \|", (base / "cost.md").read_text())
