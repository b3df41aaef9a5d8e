"""A lucene method through the real workflow on the six-document fixture: it is fused with rankbench's BM25,
reranked, in every table, on the cost page, the explorer and the history, with Anserini in its provenance; a new
question-set version reruns only its search, never its index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from lucene_helpers import lucene_engine
from model_helpers import tiny_cross_encoder
from workflow_helpers import copy_dataset, edit_config, planned_jobs, snakemake

pytestmark = pytest.mark.slow
MINI = Path("tests/fixtures/mini")
METHODS = {
    "bm25": {"type": "bm25", "k1": 0.9, "b": 0.4},
    "lucene": {"type": "lucene", "k1": 0.9, "b": 0.4},
    "lucene-tokens": {"type": "lucene", "analyzer": "rankbench", "k1": 0.9, "b": 0.4},
    "hybrid": {"type": "rrf", "inputs": ["bm25", "lucene"]},
    "lucene-ce": {"type": "rerank", "input": "lucene", "depth": 4,
                  "scorer": {"kind": "cross-encoder", "model": "models/tiny-ce"}},
}


def lucene_methods(config: dict) -> None:
    config["methods"] = METHODS
    config["evaluation"].update(depth=5, ks=[1, 5], baseline="bm25")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lucene_engine()  # skips (fails in CI) without a jar and a JDK 21+; sets the jar's variable for the workflow
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path_factory.mktemp("lucene"))
    tiny_cross_encoder(workdir / "models" / "tiny-ce")
    result = snakemake(workdir, "--cores", "2", configfile=edit_config(workdir, lucene_methods, "lucene.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def results(workdir: Path) -> Path:
    return workdir / "results" / "mini" / "v1"


def test_a_lucene_method_is_fused_reranked_and_reported_like_any_method(workdir: Path) -> None:
    runs = {m: pd.read_parquet(results(workdir) / "runs" / f"{m}.parquet") for m in METHODS}
    chunks = pd.read_parquet(workdir / "results" / "mini" / "corpus" / "sections" / "chunks.parquet")
    assert set(runs["lucene"]["chunk_id"]) <= set(chunks["chunk_id"]) and not runs["lucene"].empty
    assert (runs["lucene"].groupby("qid")["score"].apply(lambda s: s.is_monotonic_decreasing)).all()
    # The fusion ranks what either input ranked; the reranker reorders lucene's top 4 only.
    fused = runs["hybrid"].groupby("qid")["chunk_id"].apply(set)
    either = pd.concat([runs["bm25"], runs["lucene"]]).groupby("qid")["chunk_id"].apply(set)
    assert all(fused[qid] <= either[qid] for qid in fused.index)
    top4 = runs["lucene"][runs["lucene"]["rank"] <= 4].groupby("qid")["chunk_id"].apply(set)
    reranked = runs["lucene-ce"][runs["lucene-ce"]["rank"] <= 4].groupby("qid")["chunk_id"].apply(set)
    assert all(reranked[qid] == top4[qid] for qid in reranked.index)
    aggregate = pd.read_parquet(results(workdir) / "aggregate.parquet")
    assert set(METHODS) <= set(aggregate["method"])
    for page in ("comparison.md", "cost.md", "explorer.html", "failures.md"):
        assert "lucene" in (results(workdir) / page).read_text(), page
    cost = (results(workdir) / "cost.md").read_text()
    assert "retrieve_lucene, lucene_index (index)" in cost
    assert "lucene" in (workdir / "results" / "mini" / "history.md").read_text()
    metadata = yaml.safe_load((results(workdir) / "runs" / "lucene.ir_metadata.yaml").read_text())
    engine = metadata["method"]["provenance"]
    assert engine["anserini"] == "1.7.1" and len(engine["jar_sha256"]) == 64
    assert int(engine["java_version"].split(".")[0]) >= 21
    header = (f"  - `methods.lucene.engine`: `Anserini 1.7.1` (jar `{engine['jar']}`, jar sha256 "
              f"`{engine['jar_sha256']}`, Java `{engine['java_version']}`)")  # the page names the engine as recorded
    assert header in (results(workdir) / "comparison.md").read_text()
    assert "provenance" not in yaml.safe_load((results(workdir) / "runs" / "bm25.ir_metadata.yaml").read_text())[
        "method"]
    timing = json.loads((workdir / "results" / "mini" / "timings" / "retrieve" / "v1" / "lucene.json").read_text())
    questions = pd.read_parquet(results(workdir) / "questions.parquet")["qid"]
    assert set(timing["questions"]) == set(questions) and timing["batched"]
    assert timing["once"]["JVM start, index open"] > 0
    # analyzer: rankbench indexes and searches rankbench's tokens: its own index, and its top chunk is bm25's or,
    # where Lucene's one-byte lengths break a near-tie otherwise, one bm25 scores within 1% of its top.
    tokens = yaml.safe_load((results(workdir) / "runs" / "lucene-tokens.ir_metadata.yaml").read_text())
    assert tokens["method"]["provenance"]["analyzer"]["analyzer"] == "rankbench"
    bm25 = runs["bm25"].assign(top=lambda run: run.groupby("qid")["score"].transform("max"))
    near_top = bm25[bm25["score"] >= 0.99 * bm25["top"]].groupby("qid")["chunk_id"].apply(set)
    first = runs["lucene-tokens"][runs["lucene-tokens"]["rank"] == 1].set_index("qid")["chunk_id"]
    assert set(first.index) == set(near_top.index) and all(first[qid] in near_top[qid] for qid in first.index)


def test_a_new_version_reruns_only_the_search(workdir: Path) -> None:
    shutil.copy(workdir / MINI / "questions" / "v1.jsonl", workdir / MINI / "questions" / "v2.jsonl")

    def add_version(config: dict) -> None:
        lucene_methods(config)
        config["qsets"]["v2"] = {"path": str(MINI / "questions" / "v2.jsonl"), "draft": True}

    jobs = planned_jobs(workdir, edit_config(workdir, add_version, "v2.yaml"))
    assert jobs.get("retrieve_lucene") == 2 and "lucene_index" not in jobs
