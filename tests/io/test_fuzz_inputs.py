"""Property tests: whatever bytes a question set, BEIR split or demo file holds, loading ends in success or
in an InputError naming the file — never another exception."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankbench.corpus.label_checks import check_label_targets
from rankbench.errors import InputError
from rankbench.io.loaders import (
    load_beir_questions,
    load_corpus,
    load_questions,
    read_qrels_tsv,
)

REPO = Path(__file__).resolve().parents[2]
QUESTION_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/questions.schema.yaml").read_text())
CORPUS_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/corpus.schema.yaml").read_text())
DEMO = REPO / "data/demo"
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_ids = st.one_of(st.sampled_from(["q1", "q2", "é-ü", "𝒒", "", "q1 "]), st.text(max_size=6), st.integers())
_grades = st.one_of(st.integers(-2, 5), st.floats(allow_nan=True), st.sampled_from(["3", None, True]))
_labels = st.one_of(
    st.lists(st.fixed_dictionaries({"doc_id": _ids, "grade": _grades},
                                    optional={"section": st.one_of(st.none(), _ids)}), max_size=3),
    st.sampled_from([None, "labels", {}, [1]]))
_questions = st.fixed_dictionaries(
    {"qid": _ids, "question": st.one_of(st.text(max_size=40), st.text(min_size=5000, max_size=6000))},
    optional={"labels": _labels, "kind": st.sampled_from(["answerable", "all", "", 3]),
              "audience": st.sampled_from(["public", "staff", "admin"]),
              "as_of": st.sampled_from(["2025-06-01", "2025-02-30", "01/06/2025", None])})


def _encode(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass")


_question_lines = st.one_of(_questions.map(_encode), st.binary(max_size=40), st.just(b""), st.just(b"   "))


@FUZZ
@given(lines=st.lists(_question_lines, max_size=5), crlf=st.booleans(), bom=st.booleans())
def test_question_sets_load_or_raise_input_error(tmp_path: Path, lines: list[bytes], crlf: bool, bom: bool) -> None:
    path = tmp_path / "v1.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + (b"\r\n" if crlf else b"\n").join(lines))
    try:
        questions, labels = load_questions(path, QUESTION_SCHEMA)
    except InputError as error:
        assert str(path) in str(error)
    else:
        assert questions["qid"].is_unique and len(questions) >= 1
        assert labels["grade"].between(0, 3).all()
        assert set(labels["qid"]) <= set(questions["qid"])


@FUZZ
@given(rows=st.lists(st.lists(st.one_of(_ids.map(str), st.sampled_from(["1", "0", "2.5", "x", "-1"])),
                              min_size=0, max_size=4), max_size=6),
       header=st.booleans())
def test_beir_qrels_and_queries_load_or_raise_input_error(tmp_path: Path, rows: list[list[str]], header: bool) -> None:
    qrels = tmp_path / "test.tsv"
    body = "\n".join("\t".join(row) for row in rows)
    qrels.write_text(("query-id\tcorpus-id\tscore\n" if header else "") + body, encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join(json.dumps({"_id": str(i), "text": "t"}) for i in ["q1", "q2", "1", "0"]) + "\n")
    try:
        read_qrels_tsv(qrels)
        questions, labels = load_beir_questions(queries, qrels)
    except InputError as error:
        assert str(tmp_path) in str(error)
    else:
        assert set(labels["qid"]) == set(questions["qid"])


@FUZZ
@given(data=st.data())
def test_truncated_demo_files_load_or_raise_input_error(tmp_path: Path, data: st.DataObject) -> None:
    for name, load in (("corpus.jsonl", lambda p: load_corpus(p, CORPUS_SCHEMA)),
                       ("questions/v1.jsonl", lambda p: load_questions(p, QUESTION_SCHEMA))):
        raw = (DEMO / name).read_bytes()
        cut = data.draw(st.integers(0, len(raw)), label=f"cut of {name}")
        path = tmp_path / Path(name).name
        path.write_bytes(raw[:cut])
        try:
            load(path)
        except InputError as error:
            assert str(path) in str(error)


@FUZZ
@given(doc_id=_ids.map(str), section=st.one_of(st.none(), _ids.map(str)))
def test_label_targets_are_found_or_named_in_the_error(doc_id: str, section: str | None) -> None:
    documents = load_corpus(DEMO / "corpus.jsonl", CORPUS_SCHEMA)
    labels = pd.DataFrame([{"qid": "q1", "doc_id": doc_id, "section": section, "grade": 3}])
    try:
        check_label_targets(labels, documents, Path("v1.jsonl"))
    except InputError as error:
        assert "v1.jsonl" in str(error) and "qid 'q1'" in str(error)


_trec_fields = st.one_of(_ids.map(str), st.sampled_from(["Q0", "0", "1", "3", "-1", "2.5", "nan", "1e309", "x"]))


@FUZZ
@given(lines=st.lists(st.lists(_trec_fields, max_size=7).map(" ".join), max_size=6),
       raw=st.binary(max_size=20), kind=st.sampled_from(["run", "qrels"]))
def test_trec_runs_and_qrels_load_or_raise_input_error(tmp_path: Path, lines: list[str], raw: bytes,
                                                       kind: str) -> None:
    from rankbench.io.trec import read_trec_qrels, read_trec_run

    path = tmp_path / f"file.{kind}"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + raw)
    try:
        frame = read_trec_run(path) if kind == "run" else read_trec_qrels(path)
    except InputError as error:
        assert str(path) in str(error)
    else:
        if kind == "run":
            assert not frame.duplicated(["qid", "doc_id"]).any() and frame["score"].notna().all()
        else:
            assert frame["grade"].dtype == "int64"
