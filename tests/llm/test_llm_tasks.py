"""Question generation, judging, rewriting, LLM reranking and publishing, against a real local chat server.

The server answers from the prompt (a small deterministic rule stands in for the model's judgement), so every
request goes through the real HTTP client, the cache and the parsing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from llm_server import ChatServer, chat_server, completion

from rankbench.analysis.pooling import top_k_pool
from rankbench.corpus.chunking import ChunkerSpec, chunk_corpus, passage_text
from rankbench.corpus.sections import split_sections
from rankbench.errors import InputError
from rankbench.io.files import write_jsonl
from rankbench.io.frozen import read_lock
from rankbench.io.loaders import load_corpus, load_questions
from rankbench.llm import prompts
from rankbench.llm.chat import Chat, OpenAIEndpoint
from rankbench.llm.generate import duplicate_key, generate_questions
from rankbench.llm.judge import judge_pool, merge_labels
from rankbench.llm.prompts import parse_generation, parse_grade, parse_rewrite
from rankbench.llm.rewrite import rewrite_questions
from rankbench.llm.scorer import llm_scorer
from rankbench.llm.versions import publish, version_records

REPO = Path(__file__).resolve().parents[2]
MINI = REPO / "tests" / "fixtures" / "mini"
server = chat_server


@pytest.fixture(scope="module")
def documents() -> pd.DataFrame:
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "corpus.schema.yaml").read_text())
    return load_corpus(MINI / "corpus.jsonl", schema)


def make_chat(server: ChatServer, tmp_path: Path) -> Chat:
    return Chat(OpenAIEndpoint(server.base_url, "rule-model", timeout=5, retries=0), tmp_path / "cache")


def user_text(body: dict) -> str:
    return body["messages"][-1]["content"]


def test_generation_is_seeded_deduplicated_labelled_and_a_valid_version(server: ChatServer, tmp_path: Path,
                                                                         documents: pd.DataFrame) -> None:
    def answer(body: dict) -> dict:
        passage = user_text(body).split("Passage:\n", 1)[1]
        heading = passage.splitlines()[0]
        # Every passage yields the same keyword query: all but the first must be dropped as duplicates.
        return completion(f'Voici : {{"question": "Que dit la section {heading} ?", "keywords": "Velora  AIDE"}}')

    server.responder = answer
    records = generate_questions(make_chat(server, tmp_path), documents, count=4, seed=3, language="French",
                                 min_chars=20)
    assert [r["qid"] for r in records] == ["g001", "g002", "g003", "g004"]
    assert [r["style"] for r in records] == ["natural", "keyword", "natural", "natural"]
    assert len({duplicate_key(str(r["question"])) for r in records}) == 4
    assert all("French" in request["messages"][0]["content"] for request in server.requests)
    sections = {(d, s.section_id) for d, t in zip(documents["doc_id"], documents["text"]) for s in split_sections(t)}
    for record in records:
        (label,) = record["labels"]
        assert label["grade"] == 3 and (label["doc_id"], label["section"]) in sections
        assert record["kind"] == "generated"
    path = tmp_path / "gen.jsonl"
    write_jsonl(records, path)
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "questions.schema.yaml").read_text())
    questions, labels = load_questions(path, schema)
    assert len(questions) == 4 and (labels["grade"] == 3).all()
    again = generate_questions(make_chat(server, tmp_path), documents, count=4, seed=3, language="French", min_chars=20)
    assert again == records
    other = generate_questions(make_chat(server, tmp_path), documents, count=4, seed=4, language="French", min_chars=20)
    assert [r["labels"] for r in other] != [r["labels"] for r in records]


def test_reply_parsers() -> None:
    assert parse_generation('x {"question": " A ? ", "keywords": 3} y') == {"question": "A ?"}
    assert parse_generation("no json here") == {}
    assert parse_generation('{"a": 1 {"question": "B"} {"keywords": "k"}') == {"keywords": "k"}


class _CountingText(str):
    """A reply that counts the characters its `find` calls pass over: the scan's steps, whatever the machine's speed."""

    steps = 0

    def find(self, sub: str, start: int | None = None, end: int | None = None) -> int:  # type: ignore[override]
        found = super().find(sub, start, end)
        _CountingText.steps += (len(self) if found == -1 else found + 1) - (start or 0)
        return found


@pytest.mark.parametrize("reply", ["{" * 100_000 + "x", "{}" * 50_000, "}{" * 50_000, "{" + "a" * 100_000,
                                   '{"a": 1 ' * 20_000 + '} {"question": "B"}'])
def test_a_large_reply_is_scanned_in_a_linear_number_of_steps(reply: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lazy `{.*?}` with DOTALL rescans the rest of the reply from every `{` that no `}` follows (quadratic: 100,000
    braces took minutes). The scan passes over each character at most twice, and JSON parses each at most once."""
    parsed: list[int] = []
    real_loads = prompts.json.loads
    monkeypatch.setattr(prompts.json, "loads", lambda text: parsed.append(len(text)) or real_loads(text))
    _CountingText.steps = 0
    result = parse_generation(_CountingText(reply))
    assert 0 < _CountingText.steps <= 2 * len(reply) and sum(parsed) <= len(reply)  # 0: a scan we cannot count
    assert result == ({"question": "B"} if "question" in reply else {})


def test_grade_and_rewrite_replies() -> None:
    assert parse_grade("Grade: 2.") == 2 and parse_grade("7") is None and parse_grade("") is None
    assert parse_rewrite('\n  Requête : "délai remboursement vélo"\nautre') == "délai remboursement vélo"


def mini_frames(documents: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "questions.schema.yaml").read_text())
    questions, labels = load_questions(MINI / "questions" / "v1.jsonl", schema)
    return questions, labels, chunk_corpus(documents, ChunkerSpec())


def test_the_judge_grades_the_pool_and_the_merge_keeps_human_labels(server: ChatServer, tmp_path: Path,
                                                                   documents: pd.DataFrame) -> None:
    questions, labels, chunks = mini_frames(documents)
    labelled_qid = labels["qid"].iloc[0]
    run = pd.DataFrame({"qid": labelled_qid, "rank": np.arange(1, len(chunks) + 1),
                        "chunk_id": chunks["chunk_id"], "doc_id": chunks["doc_id"], "score": 0.0})
    other = run.assign(rank=run["rank"].to_numpy()[::-1])
    pooled = top_k_pool({"run": run, "other": other}, pool_depth=2)
    assert len(pooled) == min(4, len(chunks))
    assert set(pooled["chunk_id"]) == set(run["chunk_id"][:2]) | set(other.nsmallest(2, "rank")["chunk_id"])
    # Also pool the chunks that a human labelled, so agreement has something to compare.
    human_chunks = chunks[chunks["doc_id"].isin(labels.loc[labels["qid"] == labelled_qid, "doc_id"])]
    pooled = pd.concat([pooled, pd.DataFrame({"qid": labelled_qid, "chunk_id": human_chunks["chunk_id"],
                                              "doc_id": human_chunks["doc_id"]})]).drop_duplicates(["qid", "chunk_id"])
    grade_of = {text: len(text) % 4 for text in passage_text(chunks)}
    server.responder = lambda body: completion(
        f"Grade {grade_of[user_text(body).split(chr(10) * 2 + 'Passage:' + chr(10), 1)[1].rsplit(chr(10) * 2, 1)[0]]}")
    judged = judge_pool(make_chat(server, tmp_path), pooled, questions, labels, chunks)
    assert len(judged) == len(pooled) and len(server.requests) == len(pooled)
    texts = dict(zip(chunks["chunk_id"], passage_text(chunks)))
    assert list(judged["judge"]) == [grade_of[texts[c]] for c in judged["chunk_id"]]
    assert judged["human"].notna().any() and judged["human"].isna().any()
    merged = merge_labels(labels, judged)
    # Every human label is kept as it was.
    kept = labels.merge(merged, on=["qid", "doc_id", "section"], how="left", suffixes=("", "_merged"))
    assert (kept["grade"] == kept["grade_merged"]).all()
    added = merged.merge(labels, on=["qid", "doc_id", "section"], how="left", indicator=True)
    added = added[added["_merge"] == "left_only"]
    unlabelled = judged[judged["human"].isna()]
    expected = unlabelled.groupby(["qid", "doc_id", "section"])["judge"].max()
    assert len(added) == len(expected) > 0
    for row in added.itertuples():
        assert row.grade_x == expected[(row.qid, row.doc_id, row.section)]
    # A question without human labels (unanswerable) gets none from the judge.
    unanswerable = sorted(set(questions["qid"]) - set(labels["qid"]))
    if unanswerable:
        extra = judged.assign(qid=unanswerable[0], human=pd.array([pd.NA] * len(judged), dtype="Int64"))
        assert unanswerable[0] not in set(merge_labels(labels, extra)["qid"])
    records = version_records(questions, merged)
    assert [r["qid"] for r in records] == list(questions["qid"])
    assert sum(len(r["labels"]) for r in records) == len(merged)


def test_rewrites_file_has_one_query_per_question(server: ChatServer, tmp_path: Path) -> None:
    questions = pd.DataFrame({"qid": ["q1", "q2"], "question": ["Comment recharger la batterie ?", "Vide ?"]})
    server.responder = lambda body: completion("« recharge batterie »" if "batterie" in user_text(body) else "  ")
    rewrites = rewrite_questions(make_chat(server, tmp_path), questions, "French")
    assert rewrites == [{"qid": "q1", "query": "recharge batterie"}, {"qid": "q2", "query": "Vide ?"}]
    path = tmp_path / "rewrites.jsonl"
    write_jsonl(rewrites, path)
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == rewrites
    assert "recharge batterie" in path.read_text(encoding="utf-8")  # UTF-8, not \u-escaped


def test_llm_scorer_uses_p_yes_from_logprobs_and_reranks(server: ChatServer, tmp_path: Path) -> None:
    def answer(body: dict) -> dict:
        relevant = "vélo" in user_text(body).split("Passage:", 1)[1]
        yes, no = (-0.2, -1.8) if relevant else (-2.0, -0.15)
        return completion("Oui" if relevant else "Non", [("Oui", yes), ("Non", no), ("Le", -5.0)])

    server.responder = answer
    score = llm_scorer(make_chat(server, tmp_path), {"q": "Quel vélo ?"}, {"a": "un vélo", "b": "un train"})
    scores = score(pd.DataFrame({"qid": ["q", "q"], "chunk_id": ["b", "a"]}))
    e = np.exp
    np.testing.assert_allclose(scores, [e(-2.0) / (e(-2.0) + e(-0.15)), e(-0.2) / (e(-0.2) + e(-1.8))])
    assert all(request["max_tokens"] == 1 and request["logprobs"] for request in server.requests)


def test_llm_scorer_falls_back_to_the_grade_without_logprobs(server: ChatServer, tmp_path: Path) -> None:
    server.responder = lambda body: completion("2" if "Grade" in user_text(body) else "yes")
    score = llm_scorer(make_chat(server, tmp_path), {"q": "?"}, {"a": "x"})
    assert list(score(pd.DataFrame({"qid": ["q"], "chunk_id": ["a"]}))) == [2.0]


def test_publish_freezes_a_new_file_and_never_replaces_one(tmp_path: Path) -> None:
    source, lock = tmp_path / "gen.jsonl", tmp_path / "frozen.lock"
    source.write_text('{"qid": "g001"}\n', encoding="utf-8")
    dest = tmp_path / "data" / "gen1.jsonl"
    digest = publish(source, dest, "gen1", lock)
    assert dest.read_bytes() == source.read_bytes() and read_lock(lock) == {"gen1": digest}
    assert publish(source, dest, "gen1", lock) == digest  # same content again: nothing changes
    source.write_text('{"qid": "g002"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="already frozen"):
        publish(source, dest, "gen1", lock)
    with pytest.raises(InputError, match="already exists with other content"):
        publish(source, dest, "gen2", lock)
    assert dest.read_text(encoding="utf-8") == '{"qid": "g001"}\n' and "gen2" not in read_lock(lock)
    with pytest.raises(InputError, match="does not exist"):
        publish(tmp_path / "missing.jsonl", tmp_path / "x.jsonl", "x", lock)


def test_regex_of_the_judge_prompt_is_stable() -> None:
    from rankbench.llm.prompts import judge_messages

    (system, user) = judge_messages("Q ?", "P")
    assert re.search(r"one digit", system["content"]) and user["content"].endswith("Grade (0-3):")


def test_expansion_asks_each_document_for_its_questions_and_writes_a_loadable_file(server: ChatServer,
                                                                                    tmp_path: Path) -> None:
    from rankbench.io.expansions import load_expansions
    from rankbench.llm.expand import expand_documents

    documents = pd.DataFrame({"doc_id": ["d1", "d2", "d3"], "title": ["Returns", "Delivery", "Blank"],
                              "text": ["Return within 30 days.", "Bikes arrive in five days.", "x"]})
    replies = {"Returns": "1. How long can I return a bike?\n2) What is the return window?\n- How long can I return "
                          "a bike?\n\n3. Are refunds fast?\n4. extra", "Delivery": "• When will my bike arrive?",
               "Blank": "  \n"}
    server.responder = lambda body: completion(next(v for k, v in replies.items() if f"Title: {k}" in user_text(body)))
    lines = expand_documents(make_chat(server, tmp_path), documents, 3, "English")
    assert lines == [{"doc_id": "d1", "questions": ["How long can I return a bike?", "What is the return window?",
                                                    "Are refunds fast?"]},
                     {"doc_id": "d2", "questions": ["When will my bike arrive?"]}]  # d3: nothing parsed, left out
    assert "Write 3 different questions in English" in user_text(server.requests[0])
    path = tmp_path / "expansions.jsonl"
    write_jsonl(lines, path)
    assert load_expansions(path, {"d1", "d2", "d3"})["d2"] == ["When will my bike arrive?"]
