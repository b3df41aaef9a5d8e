"""A search service as a method, through the real workflow: Xapian Omega serving the mini fixture's chunks is a
`type: http` method beside BM25, fused with it and reranked, on every table; with the server stopped, the method's
rerun answers from the response cache (it sends nothing) and freezes the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from omega_server import NEEDS_OMEGA, OMEGA_PARAMS, omega_server
from workflow_helpers import copy_dataset, snakemake

from rankbench.corpus.chunking import passage_text
from rankbench.io.files import parquet_metadata

pytestmark = [pytest.mark.slow, NEEDS_OMEGA]
MINI = Path("tests/fixtures/mini")


def _write_config(workdir: Path, methods: dict) -> None:
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["methods"] = methods
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_a_search_service_is_fused_reranked_and_its_rerun_sends_nothing(tmp_path: Path) -> None:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    _write_config(workdir, {"bm25": {"type": "bm25"}})
    chunks_file = "results/mini/corpus/sections/chunks.parquet"
    result = snakemake(workdir, "--cores", "1", chunks_file)
    assert result.returncode == 0, result.stderr[-3000:]
    chunks = pd.read_parquet(workdir / chunks_file)
    with omega_server(list(zip(chunks["chunk_id"], passage_text(chunks)))) as url:
        _write_config(workdir, {
            "bm25": {"type": "bm25"},
            "omega": {"type": "http", "url": url, "params": OMEGA_PARAMS, "ids": "hits[*].id",
                      "scores": "hits[*].score", "returns": "chunk", "version_header": "X-Omega-Version"},
            "fused": {"type": "rrf", "inputs": ["bm25", "omega"]},
            "reranked": {"type": "rerank", "input": "omega", "depth": 5,
                         "scorer": {"kind": "bi-encoder", "encoder": "minilm"}},
        })
        result = snakemake(workdir, "--cores", "1")
        assert result.returncode == 0, result.stderr[-3000:]
    base = workdir / "results" / "mini" / "v1"
    run = pd.read_parquet(base / "runs" / "omega.parquet")
    assert set(run["chunk_id"]) <= set(chunks["chunk_id"]) and not run.empty
    assert (run["doc_id"] == run["chunk_id"].map(dict(zip(chunks["chunk_id"], chunks["doc_id"])))).all()
    stored = parquet_metadata(base / "runs" / "omega.parquet")
    assert stored["provenance"]["endpoint"] == url and stored["provenance"]["server"][0].startswith("xapian-omega")
    questions = pd.read_parquet(base / "questions.parquet")
    assert set(stored["latency_ms"]) == set(questions["qid"]) and min(stored["latency_ms"].values()) > 0
    metadata = yaml.safe_load((base / "runs" / "omega.ir_metadata.yaml").read_text())
    assert metadata["method"]["provenance"]["endpoint"] == url
    reranked = pd.read_parquet(base / "runs" / "reranked.parquet")
    assert not reranked["degraded"].any() and (reranked["first_stage_rank"] != reranked["rank"]).any()
    page = (base / "comparison.md").read_text()
    assert all(f"| {name} |" in page for name in ("bm25", "omega", "fused", "reranked"))
    assert (f"  - `methods.omega.engine`: `search endpoint` (endpoint `{url}`, server "
            f"`{stored['provenance']['server'][0]}`)") in page
    assert "degraded" not in page
    timing = json.loads((workdir / "results" / "mini" / "timings" / "retrieve" / "v1" / "omega.json").read_text())
    assert timing["questions"] == pytest.approx({qid: ms / 1000 for qid, ms in stored["latency_ms"].items()})
    assert timing["cached"] == 0
    workflow_cpu = (base / "cost.md").read_text().split("## Workflow CPU per question")[1]
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in workflow_cpu.splitlines() if line.startswith("| ")]
    p50 = rows[0].index("workflow CPU ms/question p50")
    assert float(next(row for row in rows if row[0] == "omega")[p50]) > 0  # the endpoint's round trips, not "–"
    # The server is gone: the method's job runs again from the cache alone, and freezes the same run.
    result = snakemake(workdir, "--cores", "1", "--forcerun", "search_http")
    assert result.returncode == 0, result.stderr[-3000:]
    pd.testing.assert_frame_equal(pd.read_parquet(base / "runs" / "omega.parquet"), run)
    assert parquet_metadata(base / "runs" / "omega.parquet") == stored
    timing = json.loads((workdir / "results" / "mini" / "timings" / "retrieve" / "v1" / "omega.json").read_text())
    assert timing["cached"] == len(questions) and set(timing["questions"].values()) == {0.0}
