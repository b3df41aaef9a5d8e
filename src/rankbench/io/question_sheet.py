"""Questions from a spreadsheet (CSV, TSV or JSONL), one row per label, into native question-set records.

Columns: `question`, `document` (a path relative to the documents folder, or a doc id), optional `qid`, `section`
(heading text or slug), `grade` (default 1), `evidence` (a verbatim quote from the document), `kind`, `audience`,
`as_of`, `tags` (separated by `;`), `difficulty`. Rows with the same qid (or, without one,
the same question text) form one question; a question whose rows name no document is unanswerable.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from rankbench.errors import InputError, raise_all
from rankbench.io.files import unguarded
from rankbench.io.loaders import check_id, check_question, read_jsonl, record_schema

SHEET_COLUMNS = ("qid", "question", "document", "section", "grade", "evidence", "kind", "audience", "as_of", "tags",
                 "difficulty")
QUESTION_FIELDS = ("question", "kind", "audience", "as_of", "tags", "difficulty")  # one value per question
TAG_SEPARATOR = ";"
DEFAULT_GRADE = 1
AUDIENCES = ("public", "staff")
# Which document and section a (document, section) cell pair names: (doc_id, section id or None).
Resolver = Callable[[str, str, str], tuple[str, str | None]]


@dataclass
class SheetQuestion:
    """One question gathered from its rows: the native record, the line of each of its rows and of each label."""

    record: dict[str, Any]
    lines: list[int] = field(default_factory=list)
    label_lines: list[int] = field(default_factory=list)


def _cell(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _csv_rows(path: Path, delimiter: str) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(path, None, f"is not valid UTF-8 (byte {error.start})", "Save the sheet as UTF-8 "
                         "(spreadsheets: CSV UTF-8).") from None
    # Lines end at \n, \r\n or \r only (a file object with newline=""), never at the other characters
    # str.splitlines() breaks at (U+2028, U+2029, U+001C-U+001E, U+0085, \v, \f): inside a cell they are text, and
    # line numbers in messages count real lines.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = [name.strip().lower() for name in next(reader, [])]
        _check_header(header, path)
        start = reader.line_num + 1
        for cells in reader:
            if any(cell.strip() for cell in cells):
                if len(cells) > len(header):
                    raise InputError(path, f"line {start}", f"has {len(cells)} cells, the header {len(header)}",
                                     "Remove the extra cells, or quote a cell that holds the delimiter.")
                yield start, dict(zip(header, map(unguarded, cells)))
            start = reader.line_num + 1
    except csv.Error as error:
        raise InputError(path, f"line {reader.line_num}", f"cannot be read as CSV ({error})",
                         "Check the quotes of that row.") from None


def _check_header(header: list[str], path: Path, where: str = "line 1") -> None:
    unknown = [name for name in header if name not in SHEET_COLUMNS]
    if unknown or "question" not in header:
        problem = f"has unknown column(s) {', '.join(map(repr, unknown))}" if unknown else "has no `question` column"
        raise InputError(path, where, problem, f"The columns are {', '.join(SHEET_COLUMNS)} "
                         "(question required; one row per label).")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InputError(path, where, f"repeats column(s) {', '.join(map(repr, repeated))}", "Keep one of each.")


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    for number, record in read_jsonl(path):
        _check_header([str(key).lower() for key in record], path, f"line {number}")
        yield number, {str(key).lower(): _cell(value) for key, value in record.items()}


def sheet_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, cells) of every non-blank row of a CSV, TSV or JSONL sheet, cells stripped."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError(path, None, "is not a file", "Give the questions sheet (.csv, .tsv or .jsonl).")
    if suffix not in (".csv", ".tsv", ".jsonl"):
        raise InputError(path, None, f"has the extension {suffix or '(none)'!r}", "Give a .csv, .tsv or .jsonl sheet.")
    rows = _jsonl_rows(path) if suffix == ".jsonl" else _csv_rows(path, "\t" if suffix == ".tsv" else ",")
    for number, cells in rows:
        yield number, {name: _cell(value) for name, value in cells.items()}


def _grade(text: str, path: Path, where: str) -> int:
    if not text:
        return DEFAULT_GRADE
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value.is_integer() or abs(value) > 2_147_483_646:
        raise InputError(path, where, f"has grade {text!r}, which is not a whole number",
                         "Grades are integers, as trec_eval reads them (0 and below: not relevant; e.g. 0-3).")
    return int(value)


def _check_fields(cells: dict[str, str], path: Path, where: str) -> None:
    if not cells.get("question"):
        raise InputError(path, where, "has no question text", "Write the question, or remove the row.")
    if cells.get("qid"):
        check_id(cells["qid"], path, where, "qid")
    if cells.get("audience") and cells["audience"] not in AUDIENCES:
        raise InputError(path, where, f"has audience {cells['audience']!r}", "Write public or staff (or leave it "
                         "empty: public).")
    if cells.get("as_of"):
        try:
            dt.date.fromisoformat(cells["as_of"])
        except ValueError:
            raise InputError(path, where, f"has as_of {cells['as_of']!r}, which is not a date",
                             "Write dates as YYYY-MM-DD.") from None
    if not cells.get("document") and (cells.get("section") or cells.get("grade") or cells.get("evidence")):
        raise InputError(path, where, "gives a section, grade or evidence but no document",
                         "Name the document the label is on, or leave section and grade empty (unanswerable).")


def _merge(question: SheetQuestion, cells: dict[str, str], path: Path, number: int) -> None:
    """A further row of a question must agree with its first row on the question's own fields."""
    record = question.record
    for name in QUESTION_FIELDS:
        if cells.get(name) and record.get(name) and cells[name] != record[name]:
            raise InputError(path, f"line {number}", f"gives {name} {cells[name]!r}, but line {question.lines[0]} "
                             f"gives {record[name]!r} for the same question (qid {record['qid']!r})",
                             "Rows of one question share its text, kind, audience, as_of, tags and difficulty: make "
                             "them agree, or "
                             "give the rows different qids.")
        if cells.get(name):
            record.setdefault(name, cells[name])


def _add_row(questions: dict[str, SheetQuestion], label_lines: dict[tuple[str, str, str | None, str], int],
             cells: dict[str, str], number: int, path: Path, resolve: Resolver) -> None:
    """One row into its question (and its label), or the row's first mistake raised."""
    where = f"line {number}"
    _check_fields(cells, path, where)
    key = "qid:" + cells["qid"] if cells.get("qid") else "text:" + cells["question"]
    if key not in questions:
        questions[key] = SheetQuestion({"qid": cells.get("qid", "")})
    question = questions[key]
    _merge(question, cells, path, number)
    question.lines.append(number)
    labels = question.record.setdefault("labels", [])
    if not cells.get("document"):
        return
    doc_id, section = resolve(cells["document"], cells.get("section", ""), where)
    label_key = (key, doc_id, section, cells.get("evidence", ""))
    if label_key in label_lines:
        raise InputError(path, f"lines {label_lines[label_key]} and {number}", f"label {doc_id!r}"
                         + (f" section {section!r}" if section else "") + " twice for one question",
                         "Keep one row per document and section, with one grade.")
    grade = _grade(cells.get("grade", ""), path, where)
    label_lines[label_key] = number
    labels.append({"doc_id": doc_id, **({"section": section} if section else {}), "grade": grade,
                   **({"evidence": cells["evidence"]} if cells.get("evidence") else {})})
    question.label_lines.append(number)


def read_question_sheet(path: Path, resolve: Resolver) -> list[SheetQuestion]:
    """The questions of a sheet in order of first row; `resolve(document, section, where)` names each label's
    doc_id and section id (raising an InputError for the sheet's line). Qids left empty are q1, q2... in order.
    Every row is read: the mistakes of all rows are raised together (errors.InputErrors)."""
    path = Path(path)
    questions: dict[str, SheetQuestion] = {}
    label_lines: dict[tuple[str, str, str | None, str], int] = {}
    errors: list[InputError] = []
    for number, cells in sheet_rows(path):
        try:
            _add_row(questions, label_lines, cells, number, path, resolve)
        except InputError as error:  # every row is read: all its mistakes are told at once
            errors.append(error)
    raise_all(errors)
    if not questions:
        raise InputError(path, None, "holds no question", "Write one row per label under a header row "
                         f"({', '.join(SHEET_COLUMNS)}).")
    _number_questions(list(questions.values()))
    validator = jsonschema.Draft202012Validator(record_schema("questions"))
    for question in questions.values():  # as the version file will be read: any refusal names the sheet's line
        check_question(question.record, validator, path, f"line {question.lines[0]}")
    return list(questions.values())


def _number_questions(questions: list[SheetQuestion]) -> None:
    """Give every question without a qid the next free `q<n>`, and a kind when the sheet has none; split its tags
    cell at `;`."""
    used = {question.record["qid"] for question in questions}
    counter = 0
    for question in questions:
        record = question.record
        if not record["qid"]:
            counter += 1
            while f"q{counter}" in used:
                counter += 1
            record["qid"] = f"q{counter}"
        record.setdefault("kind", "answerable" if any(label["grade"] > 0 for label in record["labels"])
                          else "unanswerable")
        if "tags" in record:
            record["tags"] = [tag.strip() for tag in record["tags"].split(TAG_SEPARATOR) if tag.strip()]
        question.record = {name: record[name] for name in ("qid", *QUESTION_FIELDS, "labels") if name in record}
