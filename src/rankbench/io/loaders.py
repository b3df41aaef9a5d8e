"""Load corpora and question sets (native JSONL and BEIR folders) into validated DataFrames.

Every problem is reported as an InputError naming the file, the line and the fix, so a user never
sees a traceback from deep inside a parser.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import yaml

from rankbench.errors import InputError
from rankbench.io.files import file_bytes
from rankbench.io.qrels import check_grades, check_qrels, judged_qids

# The JSON schemas of corpus and question-set records, in the workflow's one schema folder, which the package ships
# (src/rankbench/workflow links to the repository's workflow/), so a pip-installed library loads native data too.
SCHEMA_FOLDER = Path(__file__).parents[1] / "workflow" / "schemas"
DOCUMENT_COLUMNS = ["doc_id", "title", "text", "version", "valid_from", "valid_to", "audience", "lang", "metadata"]
QUESTION_COLUMNS = ["qid", "question", "kind", "audience", "as_of"]
# Optional fields a native version may give its questions, read into breakdown tables (tags: a list of labels, a
# question counts under each; difficulty: one label such as easy/medium/hard). Absent: an empty list, None.
BREAKDOWN_COLUMNS = ["tags", "difficulty"]
LABEL_COLUMNS = ["qid", "doc_id", "section", "grade"]
# Columns a native version's labels carry beside them: the quote (or None), the given or resolved offsets, and which
# occurrence of a repeated quote is meant (1-based); resolved by corpus.evidence.resolve_evidence.
EVIDENCE_COLUMNS = ["evidence", "evidence_start", "evidence_end", "occurrence"]
BEIR_KIND = "beir"
DEFAULT_KIND = "answerable"
_BLANK = re.compile(r"\s")
# A kind names a row of Markdown and HTML tables: no `|`, no control character (line breaks included).
_BAD_KIND = re.compile(r"[|\x00-\x1f\x7f]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"duplicate key(s) {', '.join(map(repr, repeated))}")
    return dict(pairs)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON; write null for a missing value")


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a BOM, CRLF endings and blank lines are accepted.

    NaN/Infinity (Python's JSON extension) and lone UTF-16 surrogates (`\\ud800`, which no UTF-8 file, Parquet
    column or page can hold) are refused with the line.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputError(path, None, f"cannot be read ({error.strerror})", "Check the path.") from None
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
            record = json.loads(text, object_pairs_hook=_reject_duplicate_keys, parse_constant=_refuse_constant)
        except ValueError as error:
            raise InputError(path, f"line {number}", f"is not a valid JSON object ({error})",
                             "Each line must hold exactly one JSON object; fix or remove that line.") from None
        if not isinstance(record, dict):
            raise InputError(path, f"line {number}", f"holds a JSON {type(record).__name__}, not an object",
                             "Each line must hold one JSON object.")
        if _SURROGATE_ESCAPE.search(line):
            try:
                json.dumps(record, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(path, f"line {number}", "holds a lone UTF-16 surrogate escape (e.g. \\ud800), "
                                 "which is no character", "Fix the text's encoding (a surrogate pair such as "
                                 "\\ud83d\\ude00 is fine).") from None
        yield number, record


def check_id(value: str, path: Path | str, where: str, field: str) -> None:
    """An id is not empty and holds no whitespace: TREC files (runs, qrels) separate fields by it."""
    if not value or _BLANK.search(value):
        raise InputError(path, where, f"{field} {value!r} is empty or contains whitespace, which TREC runs and "
                         "qrels cannot hold", f"Give a {field} without blanks (e.g. replace them with '_').")


def check_record(record: Mapping[str, Any], validator: jsonschema.protocols.Validator, path: Path, where: str) -> None:
    """Raise an InputError for the first way the record breaks the JSON Schema of the validator."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(record))
    if error is not None:
        field = ".".join(str(part) for part in error.absolute_path) or "the record"
        raise InputError(path, where, f"{field}: {error.message}",
                         "Fix that field (see rankbench/workflow/schemas/ for the expected format).")


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


def record_schema(name: str) -> dict[str, Any]:
    """The packaged JSON schema of `corpus` or `questions` records (or of the `config`)."""
    return yaml.safe_load((SCHEMA_FOLDER / f"{name}.schema.yaml").read_text(encoding="utf-8"))


def margin_bounds() -> tuple[float, float]:
    """The lowest and highest non-inferiority margin δ of a metric's mean, as the config schema bounds
    `evaluation.margin`: the one place they are set, which `rankbench gate --margin/--max-drop` read too."""
    margin = record_schema("config")["properties"]["evaluation"]["properties"]["margin"]["additionalProperties"]
    return float(margin["minimum"]), float(margin["maximum"])


def load_corpus(path: Path, schema: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Documents of a native corpus.jsonl, in file order, with unknown fields kept as JSON metadata."""
    rows, ids = [], []
    validator = jsonschema.Draft202012Validator(schema or record_schema("corpus"))
    for number, record in read_jsonl(path):
        where = f"line {number} (doc_id {record.get('doc_id')!r})"
        check_record(record, validator, path, where)
        check_id(record["doc_id"], path, where, "doc_id")
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


def load_questions(path: Path, schema: Mapping[str, Any] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Questions and their labels from a native question-set version (JSONL)."""
    questions, ids, label_where, kinds = [], [], [], []
    labels: list[dict[str, Any]] = []
    validator = jsonschema.Draft202012Validator(schema or record_schema("questions"))
    for number, record in read_jsonl(path):
        where = f"line {number} (qid {record.get('qid')!r})"
        check_question(record, validator, path, where)
        kinds.append((where, "kind" in record))
        questions.append({
            "qid": record["qid"], "question": record["question"], "kind": record.get("kind") or DEFAULT_KIND,
            "audience": record.get("audience") or "public", "as_of": record.get("as_of"),
            "tags": list(record.get("tags") or []), "difficulty": record.get("difficulty"),
        })
        ids.append((number, record["qid"]))
        pairs = [(label["doc_id"], label.get("section"), json.dumps(label.get("evidence")))
                 for label in record["labels"]]
        repeated = sorted({pair for pair in pairs if pairs.count(pair) > 1}, key=str)
        if repeated:
            raise InputError(path, where, f"labels the same document/section twice: {repeated[0][:2]}",
                             "Keep one label per document and section (and evidence), with one grade.")
        labels.extend({"qid": record["qid"], "doc_id": label["doc_id"], "section": label.get("section"),
                       "grade": label["grade"], **_evidence_fields(label)} for label in record["labels"])
        label_where.extend([where] * len(record["labels"]))
    _check_ids(ids, path, "qid", ("holds no question", "A question-set version needs at least one question."),
               "Question ids must be unique within a version: renumber one of them.")
    _check_kinds_given_throughout(kinds, path)
    frame = pd.DataFrame(labels, columns=LABEL_COLUMNS + EVIDENCE_COLUMNS)
    frame["grade"] = check_grades(frame["grade"].tolist(), path, label_where)
    for column in ("evidence_start", "evidence_end", "occurrence"):
        frame[column] = frame[column].astype("Int64")
    return pd.DataFrame(questions, columns=QUESTION_COLUMNS + BREAKDOWN_COLUMNS), frame


def _evidence_fields(label: Mapping[str, Any]) -> dict[str, Any]:
    """A label's evidence as columns: a quote, or offsets [start, end), and the occurrence of a repeated quote (all
    checked against the document by corpus.evidence.resolve_evidence)."""
    evidence = label.get("evidence")
    offsets = evidence if isinstance(evidence, list) else [None, None]
    return {"evidence": evidence if isinstance(evidence, str) else None, "evidence_start": offsets[0],
            "evidence_end": offsets[1], "occurrence": label.get("occurrence")}


def check_question(record: Mapping[str, Any], validator: jsonschema.Draft202012Validator, path: Path,
                   where: str) -> None:
    """One question record's own fields (schema, qid, text, kind, tags, difficulty, as_of), as every reader of
    questions checks them:
    a version file, or a questions sheet (then `where` is the sheet's line)."""
    check_record(record, validator, path, where)
    check_id(record["qid"], path, where, "qid")
    _check_question_text(record["question"], path, where)
    if "kind" in record:
        _check_kind(record["kind"], path, where)
    for tag in record.get("tags") or []:
        _check_kind(tag, path, where, "tag")
    if "difficulty" in record:
        _check_kind(record["difficulty"], path, where, "difficulty")
    _check_date(record.get("as_of"), path, where, "as_of")


def _check_question_text(text: str, path: Path, where: str) -> None:
    if not text.strip():
        raise InputError(path, where, "has a blank question text", "Write the question, or remove the line.")


def _check_kind(kind: str, path: Path, where: str, field: str = "kind") -> None:
    """A kind (or a tag, a difficulty) names a row or column of the report's tables: visible text without `|` or
    line breaks, not padded."""
    if not kind.strip() or kind != kind.strip() or _BAD_KIND.search(kind):
        example = {"kind": "`how-to` or `policy`", "tag": "`billing` or `multi-hop`",
                   "difficulty": "`easy`, `medium` or `hard`"}[field]
        raise InputError(path, where, f"{field} {kind!r} cannot name a table row (blank, padded, or holding `|` "
                         "or a control character)", f"Use a short visible name such as {example}.")


def _check_kinds_given_throughout(kinds: list[tuple[str, bool]], path: Path) -> None:
    """Kinds are optional, but for every question or none: a left-out kind would silently count as 'answerable'."""
    given = [where for where, has_kind in kinds if has_kind]
    missing = [where for where, has_kind in kinds if not has_kind]
    if given and missing:
        raise InputError(path, missing[0], f"has no kind, while {len(given)} other question(s) have one "
                         f"(first: {given[0]})", "Give every question a kind, or none (then all are "
                         f"'{DEFAULT_KIND}').")


def load_beir_corpus(path: Path) -> pd.DataFrame:
    """Documents of a BEIR corpus.jsonl (`_id`, `title`, `text`)."""
    rows, ids = [], []
    for number, record in read_jsonl(path):
        doc_id, text, title = record.get("_id"), record.get("text"), record.get("title")
        if not (isinstance(doc_id, str) and doc_id and isinstance(text, str) and isinstance(title, (str, type(None)))):
            raise InputError(path, f"line {number}",
                             "needs a string `_id`, a string `text` and a string `title` (or none)",
                             "BEIR corpus lines look like {\"_id\": \"d1\", \"title\": \"...\", \"text\": \"...\"}.")
        check_id(doc_id, path, f"line {number}", "_id")
        extra = {key: value for key, value in record.items() if key not in ("_id", "title", "text")}
        rows.append({"doc_id": doc_id, "title": record.get("title") or "", "text": text, "version": None,
                     "valid_from": None, "valid_to": None, "audience": "public", "lang": None,
                     "metadata": json.dumps(extra, sort_keys=True, ensure_ascii=False)})
        ids.append((number, doc_id))
    return _documents_frame(rows, ids, path)


def load_beir_questions(queries_path: Path, qrels_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Questions of a BEIR split (the queries its qrels file judges) and their labels."""
    texts: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, record in read_jsonl(queries_path):
        qid, text = record.get("_id"), record.get("text")
        if not isinstance(qid, str) or not qid or not isinstance(text, str):
            raise InputError(queries_path, f"line {number}", "needs a string `_id` and a string `text`",
                             "BEIR query lines look like {\"_id\": \"q1\", \"text\": \"...\"}.")
        texts[qid] = text
        lines[qid] = number
    labels = read_qrels_tsv(qrels_path)
    qids = judged_qids(labels, texts.keys(), qrels_path, queries_path, "query-id",
                       "Use the queries file of the same BEIR dataset.")
    for qid in qids:
        _check_question_text(texts[qid], queries_path, f"line {lines[qid]} (_id {qid!r})")
    questions = pd.DataFrame({"qid": qids, "question": [texts[qid] for qid in qids], "kind": BEIR_KIND,
                              "audience": "public", "as_of": None}, columns=QUESTION_COLUMNS)
    return questions, labels


def read_qrels_tsv(path: Path) -> pd.DataFrame:
    """BEIR qrels TSV (`query-id`, `corpus-id`, `score`, with a header line; gzipped or not) as labels, checked by
    check_qrels as every qrels reader is (exact repeats kept once, two grades for one pair refused)."""
    rows, where = [], []
    try:
        with io.StringIO(file_bytes(path).decode("utf-8-sig"), newline="") as handle:
            for number, fields in enumerate(csv.reader(handle, delimiter="\t"), start=1):
                if not fields or (number == 1 and fields[0] == "query-id"):
                    continue
                if len(fields) != 3:
                    raise InputError(path, f"line {number}", f"has {len(fields)} fields, expected 3",
                                     "Each line must read query-id<TAB>corpus-id<TAB>score.")
                for field, value in zip(("query-id", "corpus-id"), fields):
                    check_id(value, path, f"line {number}", field)
                rows.append((fields[0], fields[1], fields[2]))
                where.append(f"line {number}")
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError(path, None, f"cannot be read as UTF-8 TSV ({error})", "Check the path and encoding.") from None
    qrels = check_qrels(pd.DataFrame(rows, columns=["qid", "item_id", "grade"]), path, where,
                        ("query", "document"))
    return qrels.rename(columns={"item_id": "doc_id"}).assign(section=None)[LABEL_COLUMNS]
