"""`rankbench judge`'s logic: the append-only judgments file, evidence selections checked as labels' evidence,
freezing through pool-import's import_labels, and agreement (kappa against scikit-learn's)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankbench.analysis.judging import (
    ACCEPTED,
    LLM_JUDGE,
    JudgmentLog,
    agreement_markdown,
    agreement_tables,
    check_judge_name,
    filled_labels,
    heading_paths,
    judging_pool,
    latest_judgments,
    read_events,
    selected_evidence,
)
from rankbench.analysis.pooling import import_labels
from rankbench.corpus.evidence import evidence_span
from rankbench.corpus.sections import split_sections
from rankbench.errors import InputError

HOSTILE = ("# Doc\n## Intro\nPlain start. <script>alert(1)</script> <img src=x onerror=alert(2)>\n"
           "## Arabic\nمرحبا بالعالم، هذا نص. e\u0301te\u0301 ç\u0327 🚲 bike 🚲 bike.\n")


def _pool(text: str = HOSTILE) -> tuple:
    sections = split_sections(text)
    chunks = pd.DataFrame({"chunk_id": [f"d#{s.section_id}" for s in sections if s.body],
                           "start": [s.start for s in sections if s.body], "end": [s.end for s in sections if s.body]})
    rows = pd.DataFrame({"qid": "q1", "question": "Q?", "chunk_id": chunks["chunk_id"], "doc_id": "d",
                         "section": [s.section_id for s in sections if s.body], "title": "T", "methods": "m",
                         "best_rank": range(1, len(chunks) + 1), "grade": ""})
    return judging_pool(rows, chunks, pd.DataFrame({"doc_id": ["d"], "text": [text]}), None), text


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def test_a_selection_is_the_evidence_a_label_resolves_to_exactly_whatever_its_characters() -> None:
    """A browser measures selections in UTF-16 units: astral characters (🚲), combining accents and right-to-left
    text must map to the same document characters that `evidence` resolves the stored quote to."""
    pool, text = _pool()
    passage = pool.passages["q1"][1]
    shown = text[passage.start:passage.end]
    for quote in ("مرحبا بالعالم", "e\u0301te\u0301 ç\u0327", "🚲 bike", "bike 🚲 bike."):
        low = shown.index(quote)
        evidence = selected_evidence(pool, passage, _utf16(shown[:low]), _utf16(shown[:low + len(quote)]), quote)
        assert text[evidence["start"]:evidence["end"]] == quote == evidence["quote"]
        assert evidence_span(text, split_sections(text), evidence["quote"], evidence["occurrence"], passage.section,
                             "v.jsonl", "q1") == (evidence["start"], evidence["end"])
    # "🚲 bike" occurs twice: the second selection is stored as occurrence 2
    second = shown.rindex("🚲 bike")
    assert selected_evidence(pool, passage, _utf16(shown[:second]), _utf16(shown[:second]) + 7,
                             "🚲 bike")["occurrence"] == 2
    with pytest.raises(InputError, match="inside a character"):
        at = _utf16(shown[:shown.index("🚲")]) + 1
        selected_evidence(pool, passage, at, at + 3, "x")
    with pytest.raises(InputError, match="does not match"):
        selected_evidence(pool, passage, 0, 3, "zzz")
    with pytest.raises(InputError, match="empty evidence quote"):
        selected_evidence(pool, passage, _utf16(shown[:shown.index(" ")]), _utf16(shown[:shown.index(" ")]) + 1, " ")


def test_heading_paths_nest_by_level() -> None:
    text = "intro\n# A\na\n## B\nb\n### C\nc\n## D\nd\n"
    assert heading_paths(text) == {"_intro": [], "a": ["A"], "b": ["A", "B"], "c": ["A", "B", "C"], "d": ["A", "D"]}


def test_each_judgment_is_appended_at_once_and_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "alice.jsonl"
    log = JudgmentLog(path, "alice")
    event = {"qid": "q1", "chunk_id": "c1", "grade": 2, "skip": False}
    assert log.append(event, seen=0)[0]
    assert log.append({**event, "chunk_id": "c2", "grade": None, "skip": True}, seen=0)[0]
    # a second tab that saw no judgment of c1 cannot overwrite the one made meanwhile: it gets it back
    written, current = log.append({**event, "grade": 0}, seen=0)
    assert not written and current["grade"] == 2 and current["n"] == 1
    assert log.append({**event, "grade": 0}, seen=1)[0]
    lines = path.read_bytes()
    # kill -9 in the middle of a write: the partial line is the only judgment lost
    path.write_bytes(lines + b'{"qid": "q1", "chunk_id": "c3", "gr')
    reopened = JudgmentLog(path, "alice")
    assert reopened.torn and path.read_bytes() == lines
    assert {key: event["grade"] for key, event in reopened.latest.items()} == {("q1", "c1"): 0, ("q1", "c2"): None}
    judgments = latest_judgments(tmp_path)
    assert sorted(judgments["grade"].dropna()) == [0]
    path.write_bytes(lines + b"not json\n" + lines)
    with pytest.raises(InputError, match=r"alice.jsonl, line 4: is not a judgment"):
        list(read_events(path))


def test_judge_names_name_files_only() -> None:
    assert check_judge_name("alice.b-2") == "alice.b-2"
    for bad in ("../x", "", "a b", LLM_JUDGE):
        with pytest.raises(InputError, match="--judge"):
            check_judge_name(bad)


def _judgments(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["judge", "qid", "chunk_id", "doc_id", "section", "grade", "decided",
                                        "suggestion", "evidence", "occurrence"])
    frame["grade"] = frame["grade"].astype(object)
    return frame


def test_freezing_adds_the_best_grade_per_section_with_its_evidence_and_never_changes_the_source(tmp_path) -> None:
    judgments = _judgments([
        ("alice", "q1", "d#s1", "d", "s1", 1, "person", None, None, None),
        ("alice", "q1", "d#s1~2", "d", "s1", 3, "person", None, "two words", 2),
        ("alice", "q1", "d#s2", "d", "s2", None, "person", None, None, None),  # skipped
        ("bob", "q1", "d#s1~2", "d", "s1", 3, "person", None, None, None),
    ])
    filled = filled_labels(judgments, [], tmp_path)
    assert filled.to_dict(orient="records") == [{"qid": "q1", "doc_id": "d", "section": "s1", "grade": 3,
                                                 "evidence": "two words", "occurrence": 2}]
    source = tmp_path / "v1.jsonl"
    source.write_text(json.dumps({"qid": "q1", "question": "Q?", "labels": [{"doc_id": "d", "grade": 1}]}) + "\n")
    before = source.read_bytes()
    added, _ = import_labels(filled, source, tmp_path / "v2.jsonl", "v2", tmp_path / "frozen.lock")
    assert added == 1 and source.read_bytes() == before
    assert json.loads((tmp_path / "v2.jsonl").read_text())["labels"][1] == {
        "doc_id": "d", "section": "s1", "grade": 3, "evidence": "two words", "occurrence": 2}
    split = _judgments([("alice", "q1", "d#s1", "d", "s1", 1, "person", None, None, None),
                        ("bob", "q1", "d#s1", "d", "s1", 2, "person", None, None, None)])
    with pytest.raises(InputError, match=r"question q1, passage d#s1: is graded differently"):
        filled_labels(split, [], tmp_path)
    assert filled_labels(split, ["bob"], tmp_path)["grade"].tolist() == [2]
    with pytest.raises(InputError, match="no judgment of carol"):
        filled_labels(split, ["carol"], tmp_path)


def test_agreement_matches_scikit_learn_over_the_pairs_both_graded() -> None:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(3)
    alice = rng.integers(0, 4, 60)
    bob = np.clip(alice + rng.integers(-1, 2, 60), 0, 3)
    rows = [("alice", "q", f"c{i}", "d", "s", int(g), ACCEPTED if i < 5 else "person", None, None, None)
            for i, g in enumerate(alice)]
    rows += [("bob", "q", f"c{i}", "d", "s", int(g), "person", None, None, None) for i, g in enumerate(bob)]
    rows += [("bob", "q", "only-bob", "d", "s", 3, "person", None, None, None),
             ("bob", "q", "skipped", "d", "s", None, "person", None, None, None)]
    llm = pd.DataFrame({"qid": "q", "chunk_id": [f"c{i}" for i in range(30)], "judge": pd.array(bob[:30],
                                                                                             dtype="Int64")})
    stats, disagreements = agreement_tables(_judgments(rows), llm, resamples=500)
    people = stats.iloc[0]
    assert (people.rater_a, people.rater_b, people.n) == ("alice", "bob", 60)
    assert people.kappa == pytest.approx(cohen_kappa_score(alice, bob, labels=range(4)))
    assert people.kappa_quadratic == pytest.approx(cohen_kappa_score(alice, bob, labels=range(4),
                                                                     weights="quadratic"))
    assert people.kappa_low < people.kappa < people.kappa_high
    with_llm = stats.set_index(["rater_a", "rater_b"]).loc[("alice", LLM_JUDGE)]
    assert with_llm.n == 30 and with_llm.accepted == 5
    assert with_llm.kappa == pytest.approx(cohen_kappa_score(alice[:30], bob[:30], labels=range(4)))
    assert len(disagreements[disagreements["rater_b"] == "bob"]) == int((alice != bob).sum())
    text = agreement_markdown("v1", stats, disagreements)
    assert text == agreement_markdown("v1", *agreement_tables(_judgments(rows), llm, resamples=500))
    assert "| alice | bob | 60 |" in text and f"## Disagreements ({len(disagreements)})" in text


def test_judge_usage_errors_exit_2_naming_what_to_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rankbench.cli.commands import dispatch

    config = tmp_path / "config.yaml"
    config.write_text("dataset: {name: d, format: native, corpus: c.jsonl, lock: frozen.lock}\n"
                      "qsets: {v1: {path: v1.jsonl}}\n")
    cases = [(["--qset", "v9"], "has no version 'v9'"),
             (["--qset", "v1", "--judge", "../x"], "is not a judge name"),
             (["--qset", "v1"], "needs --judge NAME"),
             (["--qset", "v1", "--freeze"], "needs --version NAME"),
             (["--qset", "v1", "--freeze", "--version", "v1"], "already has a version 'v1'"),
             (["--qset", "v1", "--freeze", "--version", "v2"], "holds no judgment"),
             (["--qset", "v1", "--judge", "alice"], "holds no run")]
    for args, message in cases:
        assert dispatch(["judge", *args, "--config", str(config), "--directory", str(tmp_path)]) == 2, args
        assert message in capsys.readouterr().err, args


def test_the_server_answers_its_own_port_on_ip_addresses_and_localhost_only(tmp_path: Path) -> None:
    """A DNS name other than localhost (or the --host given) is how a rebinding page reaches a local server."""
    from rankbench.cli.judge import JudgeServer

    pool, _ = _pool()
    server = JudgeServer(("127.0.0.1", 0), pool, JudgmentLog(tmp_path / "a.jsonl", "a"), None, False)  # type: ignore[arg-type]
    try:
        port = server.port
        assert all(server.answers(f"{host}:{port}") for host in ("127.0.0.1", "localhost", "[::1]", "10.0.0.7"))
        assert not any(server.answers(host) for host in (f"evil.example:{port}", f"127.0.0.1:{port + 1}",
                                                         "127.0.0.1", None, f"localhost:{port}x"))
    finally:
        server.server_close()
