"""The LLM stage in the real workflow on the mini fixture, against a real local chat server (no model needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from llm_server import ChatServer, chat_server, completion
from workflow_helpers import copy_dataset, edit_config, planned_jobs, snakemake

from rankbench.llm.versions import publish

pytestmark = pytest.mark.slow
server = chat_server


def answer(body: dict) -> dict:
    """Generation → JSON, judge → a digit, relevance → yes/no logprobs, rewrite → a query."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "test questions" in system:
        heading = user.split("Passage:\n", 1)[1].splitlines()[0]
        return completion(json.dumps({"question": f"What about {heading}?", "keywords": f"{heading} policy"}))
    if "grade search results" in system:
        return completion("3" if "refund" in user.lower() else "0")
    if "yes or no" in system:
        passage = user.split("Passage:", 1)[1].lower()
        return completion("yes", [("yes", -0.1 if "refund" in passage else -2.0), ("no", -1.0)])
    return completion("rewritten " + user.rsplit("\n", 1)[-1])


def test_generate_judge_rewrite_publish_and_evaluate(server: ChatServer, tmp_path: Path) -> None:
    server.responder = answer
    workdir = copy_dataset(Path("tests/fixtures/mini/config.yaml"), [Path("tests/fixtures/mini")], tmp_path)
    chat = {"backend": "openai", "base_url": server.base_url, "model": "rules", "timeout": 10, "retries": 0,
            "cache": str(tmp_path / "llm-cache")}

    def add_llm(config: dict) -> None:
        config["llm"] = {"chat": chat, "generate": {"name": "gen1", "count": 2, "seed": 0},
                         "judge": {"qsets": ["v1"], "depth": 2}, "rewrite": {"qsets": ["v1"]}}
        config["methods"]["bm25+llm"] = {"type": "rerank", "input": "bm25", "depth": 3,
                                         "scorer": {"kind": "llm", "chat": chat}}

    edit_config(workdir, add_llm, "config.yaml")
    result = snakemake(workdir, "--cores", "1", "llm")
    assert result.returncode == 0, result.stderr[-3000:]
    out = workdir / "results" / "mini"
    questions = pd.read_parquet(out / "v1" / "questions.parquet")
    rewrites = [json.loads(line) for line in (out / "v1" / "llm" / "rewrites.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in rewrites] == list(questions["qid"])
    assert all(r["query"].startswith("rewritten ") for r in rewrites)
    judged = pd.read_parquet(out / "v1" / "llm" / "judgements.parquet")
    assert judged["judge"].notna().all() and set(judged["judge"]) <= {0, 3}
    assert "kappa quadratic" in (out / "v1" / "llm" / "agreement.md").read_text()
    sent = len(server.requests)
    assert planned_jobs(workdir) != {} and snakemake(workdir, "--dry-run", "llm").returncode == 0
    rerun = snakemake(workdir, "--forcerun", "llm_judge", "llm_rewrite", "--cores", "1", "llm")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert len(server.requests) == sent  # the rerun was answered by the request cache
    assert "(all from the cache)" in (out / "v1" / "llm" / "agreement.md").read_text()

    data = workdir / "tests" / "fixtures" / "mini" / "questions"
    publish(out / "llm" / "generated" / "gen1.jsonl", data / "gen1.jsonl", "gen1", data / "frozen.lock")
    publish(out / "v1" / "llm" / "judged.jsonl", data / "v1-judged.jsonl", "v1-judged", data / "frozen.lock")

    def add_versions(config: dict) -> None:
        config["qsets"]["gen1"] = {"path": "tests/fixtures/mini/questions/gen1.jsonl"}
        config["qsets"]["v1-judged"] = {"path": "tests/fixtures/mini/questions/v1-judged.jsonl"}

    edit_config(workdir, add_versions, "config.yaml")
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    for qset in ("gen1", "v1-judged"):
        table = (out / qset / "comparison.md").read_text()
        assert "| bm25+llm |" in table and f"question-set version {qset}" in table
        assert "LLM judge agreement" not in table  # only the judged version's page has it
    # the judged version's robustness swaps the judge's grades in and corrects them with PPI; the others cannot
    assert "LLM labels" in set(pd.read_parquet(out / "v1" / "robustness.parquet")["perturbation"])
    assert "## LLM judge" in (out / "v1" / "robustness.md").read_text()
    assert "not applicable" not in (out / "v1" / "robustness.md").read_text()
    assert "not applicable (no LLM judgements" in (out / "gen1" / "robustness.md").read_text()
    agreement = pd.read_parquet(out / "v1" / "llm" / "agreement.parquet").set_index("kind")
    page = (out / "v1" / "comparison.md").read_text().split("### LLM judge agreement with these labels")[1]
    assert f"| all | {agreement.loc['all', 'n']} | {agreement.loc['all', 'exact']:.3f} |" in page
    generated = pd.read_parquet(out / "gen1" / "questions.parquet")
    assert set(generated["kind"]) == {"generated"} and len(generated) == 2
    labels = pd.read_parquet(out / "v1-judged" / "labels.parquet")
    human = pd.read_parquet(out / "v1" / "labels.parquet")
    assert len(labels) > len(human)
    assert len(human.merge(labels, on=["qid", "doc_id", "section", "grade"])) == len(human)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    assert "llm" in config and planned_jobs(workdir) == {}


def test_the_llm_demo_config_plans_llm_rewriting_and_reranking(tmp_path: Path) -> None:
    """config/llm-demo.yaml reads the frozen LLM rewrites of every version and gives the local LLM reranker the
    model's threads (a dry run: no model needed)."""
    workdir = copy_dataset(Path("config/llm-demo.yaml"), [Path("data/demo")], tmp_path)
    jobs = planned_jobs(workdir)
    assert jobs["rerank"] == 3 and jobs["prepare_rewrites"] == 3 and jobs["embed_rewritten_queries"] == 3
    plan = snakemake(workdir, "--dry-run", "--forceall", "--cores", "2")
    assert plan.returncode == 0, plan.stderr[-3000:]
    jobs_text = re.split(r"\n(?=(?:local)?rule \w+:)", plan.stdout)
    rerank_jobs = [job for job in jobs_text if job.startswith(("rule rerank:", "localrule rerank:"))]
    assert len(rerank_jobs) == 3 and all("threads: 2" in job for job in rerank_jobs)
    rewritten = [job for job in jobs_text if re.search(r"output: [^\n]*runs/bm25-llm-rewrite\.parquet", job)]
    assert len(rewritten) == 3 and all(re.search(r"input: [^\n]*rewrites/llm\.parquet", job) for job in rewritten)
