"""Load corpora and question sets (native JSONL and BEIR folders) into validated DataFrames.

Every problem is reported as an InputError naming the file, the line and the fix, so a user never
sees a traceback from deep inside a parser.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd

from rankbench.errors import InputError

DOCUMENT_COLUMNS = ["doc_id", "title", "text", "version", "valid_from", "valid_to", "audience", "lang", "metadata"]
QUESTION_COLUMNS = ["qid", "question", "kind", "audience", "as_of"]
LABEL_COLUMNS = ["qid", "doc_id", "section", "grade"]
BEIR_KIND = "beir"
DEFAULT_KIND = "answerable"


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"duplicate key(s) {', '.join(map(repr, repeated))}")
    return dict(pairs)


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a BOM, CRLF endings and blank lines are accepted."""
    raw = Path(path).read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(path, f"line {number}", f"is not valid UTF-8 (byte {error.start})",
                             "Save the file as UTF-8.") from None
        try:
            record = json.loads(text, object_pairs_hook=_reject_duplicate_keys)
        except ValueError as error:
            raise InputError(path, f"line {number}", f"is not a valid JSON object ({error})",
                             "Each line must hold exactly one JSON object; fix or remove that line.") from None
        if not isinstance(record, dict):
            raise InputError(path, f"line {number}", f"holds a JSON {type(record).__name__}, not an object",
                             "Each line must hold one JSON object.")
        yield number, record


def check_record(record: Mapping[str, Any], schema: Mapping[str, Any], path: Path, where: str) -> None:
    """Raise an InputError for the first way the record breaks the JSON Schema."""
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(record))
    if error is not None:
        field = ".".join(str(part) for part in error.absolute_path) or "the record"
        raise InputError(path, where, f"{field}: {error.message}",
                         "Fix that field (see workflow/schemas/ for the expected format).")


def _check_date(value: str | None, path: Path, where: str, field: str) -> None:
    if value is None:
        return
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(path, where, f"{field} {value!r} is not a calendar date",
                         "Write dates as YYYY-MM-DD.") from None


def _first_duplicate(values: list[tuple[int, str]]) -> tuple[int, int, str] | None:
    first_seen: dict[str, int] = {}
    for line, value in values:
        if value in first_seen:
            return first_seen[value], line, value
        first_seen[value] = line
    return None


def load_corpus(path: Path, schema: Mapping[str, Any]) -> pd.DataFrame:
    """Documents of a native corpus.jsonl, in file order, with unknown fields kept as JSON metadata."""
    rows, ids = [], []
    for number, record in read_jsonl(path):
        where = f"line {number} (doc_id {record.get('doc_id')!r})"
        check_record(record, schema, path, where)
        for field in ("valid_from", "valid_to"):
            _check_date(record.get(field), path, where, field)
        if record.get("valid_from") and record.get("valid_to") and record["valid_from"] >= record["valid_to"]:
            raise InputError(path, where, "valid_from is not before valid_to",
                             "Validity is the half-open interval [valid_from, valid_to); fix the dates.")
        extra = {key: value for key, value in record.items() if key not in DOCUMENT_COLUMNS}
        rows.append({
            "doc_id": record["doc_id"], "title": record.get("title") or "", "text": record["text"],
            "version": record.get("version"), "valid_from": record.get("valid_from"),
            "valid_to": record.get("valid_to"), "audience": record.get("audience") or "public",
            "lang": record.get("lang"), "metadata": json.dumps(extra, sort_keys=True, ensure_ascii=False),
        })
        ids.append((number, record["doc_id"]))
    return _documents_frame(rows, ids, path)


def _check_ids(ids: list[tuple[int, str]], path: Path, field: str, empty: tuple[str, str], repeat_fix: str) -> None:
    """At least one record, and no id on two lines (the error names both lines)."""
    if not ids:
        raise InputError(path, None, *empty)
    duplicate = _first_duplicate(ids)
    if duplicate:
        first, second, value = duplicate
        raise InputError(path, f"lines {first} and {second}", f"repeat {field} {value!r}", repeat_fix)


def _documents_frame(rows: list[dict[str, Any]], ids: list[tuple[int, str]], path: Path) -> pd.DataFrame:
    _check_ids(ids, path, "doc_id", ("holds no document", "Point the config at a corpus with at least one document."),
               "Document ids must be unique: give one of them another id (e.g. with a version suffix).")
    return pd.DataFrame(rows, columns=DOCUMENT_COLUMNS)


def load_questions(path: Path, schema: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Questions and their labels from a native question-set version (JSONL)."""
    questions, labels, ids = [], [], []
    for number, record in read_jsonl(path):
        where = f"line {number} (qid {record.get('qid')!r})"
        check_record(record, schema, path, where)
        _check_date(record.get("as_of"), path, where, "as_of")
        questions.append({
            "qid": record["qid"], "question": record["question"], "kind": record.get("kind") or DEFAULT_KIND,
            "audience": record.get("audience") or "public", "as_of": record.get("as_of"),
        })
        ids.append((number, record["qid"]))
        pairs = [(label["doc_id"], label.get("section")) for label in record["labels"]]
        repeated = sorted({pair for pair in pairs if pairs.count(pair) > 1}, key=str)
        if repeated:
            raise InputError(path, where, f"labels the same document/section twice: {repeated[0]}",
                             "Keep one label per document and section, with one grade.")
        labels.extend({"qid": record["qid"], "doc_id": label["doc_id"], "section": label.get("section"),
                       "grade": int(label["grade"])} for label in record["labels"])
    _check_ids(ids, path, "qid", ("holds no question", "A question-set version needs at least one question."),
               "Question ids must be unique within a version: renumber one of them.")
    return pd.DataFrame(questions, columns=QUESTION_COLUMNS), pd.DataFrame(labels, columns=LABEL_COLUMNS)


def load_beir_corpus(path: Path) -> pd.DataFrame:
    """Documents of a BEIR corpus.jsonl (`_id`, `title`, `text`)."""
    rows, ids = [], []
    for number, record in read_jsonl(path):
        doc_id, text = record.get("_id"), record.get("text")
        if not isinstance(doc_id, str) or not doc_id or not isinstance(text, str):
            raise InputError(path, f"line {number}", "needs a string `_id` and a string `text`",
                             "BEIR corpus lines look like {\"_id\": \"d1\", \"title\": \"...\", \"text\": \"...\"}.")
        extra = {key: value for key, value in record.items() if key not in ("_id", "title", "text")}
        rows.append({"doc_id": doc_id, "title": record.get("title") or "", "text": text, "version": None,
                     "valid_from": None, "valid_to": None, "audience": "public", "lang": None,
                     "metadata": json.dumps(extra, sort_keys=True, ensure_ascii=False)})
        ids.append((number, doc_id))
    return _documents_frame(rows, ids, path)


def load_beir_questions(queries_path: Path, qrels_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Questions of a BEIR split (the queries its qrels file judges) and their labels."""
    texts: dict[str, str] = {}
    for number, record in read_jsonl(queries_path):
        qid, text = record.get("_id"), record.get("text")
        if not isinstance(qid, str) or not qid or not isinstance(text, str):
            raise InputError(queries_path, f"line {number}", "needs a string `_id` and a string `text`",
                             "BEIR query lines look like {\"_id\": \"q1\", \"text\": \"...\"}.")
        texts[qid] = text
    labels = read_qrels_tsv(qrels_path)
    missing = sorted(set(labels["qid"]) - texts.keys())
    if missing:
        raise InputError(qrels_path, f"query-id {missing[0]!r}", f"judges {len(missing)} query id(s) absent from "
                         f"{queries_path.name}", "Use the queries file of the same BEIR dataset.")
    qids = list(dict.fromkeys(labels["qid"]))
    questions = pd.DataFrame({"qid": qids, "question": [texts[qid] for qid in qids], "kind": BEIR_KIND,
                              "audience": "public", "as_of": None}, columns=QUESTION_COLUMNS)
    return questions, labels


def read_qrels_tsv(path: Path) -> pd.DataFrame:
    """BEIR qrels TSV (`query-id`, `corpus-id`, `score`, with a header line) as labels."""
    rows = []
    with open(path, encoding="utf-8-sig", newline="") as handle:
        for number, fields in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not fields or (number == 1 and fields[0] == "query-id"):
                continue
            if len(fields) != 3:
                raise InputError(path, f"line {number}", f"has {len(fields)} fields, expected 3",
                                 "Each line must read query-id<TAB>corpus-id<TAB>score.")
            try:
                grade = int(fields[2])
            except ValueError:
                raise InputError(path, f"line {number}", f"score {fields[2]!r} is not an integer",
                                 "Relevance scores must be integer grades.") from None
            rows.append({"qid": fields[0], "doc_id": fields[1], "section": None, "grade": grade})
    labels = pd.DataFrame(rows, columns=LABEL_COLUMNS)
    duplicated = labels[labels.duplicated(["qid", "doc_id"], keep=False)]
    if not duplicated.empty:
        qid, doc_id = duplicated.iloc[0][["qid", "doc_id"]]
        raise InputError(path, f"query {qid!r}, document {doc_id!r}", "is judged more than once",
                         "Keep one grade per query and document.")
    return labels
