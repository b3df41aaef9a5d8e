"""Classic TREC test collections: SGML documents, topics (SGML or TSV) and qrels, with errors naming file and line.

Documents: `<DOC><DOCNO>id</DOCNO><TITLE>..</TITLE><TEXT>..</TEXT></DOC>` (HEADLINE stands for TITLE; several TEXT
elements are joined; a DOC without TEXT gives its content outside DOCNO and the title). Topics: `<top><num> Number:
401 <title> .. <desc> Description: .. <narr> Narrative: ..</top>`, closing tags optional, or `qid<TAB>text` lines.
Qrels: `qid iteration docno grade`, read by io.trec.read_qrels.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.loaders import DOCUMENT_COLUMNS, QUESTION_COLUMNS, check_id
from rankbench.io.qrels import judged_qids
from rankbench.io.trec import read_qrels

KIND = "trec"
TOPIC_FIELDS = ("title", "desc", "title+desc")
_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.IGNORECASE | re.DOTALL)
_DOC_TAG = re.compile(r"</?DOC>", re.IGNORECASE)
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.IGNORECASE | re.DOTALL)
_TITLE = re.compile(r"<(TITLE|HEADLINE)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_TEXT = re.compile(r"<TEXT>(.*?)</TEXT>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(\s[^<>]*)?/?>")
_TOP = re.compile(r"<top>(.*?)</top>", re.IGNORECASE | re.DOTALL)
_TOP_TAG = re.compile(r"</?top>", re.IGNORECASE)
_FIELD = re.compile(r"<(/?)(num|title|desc|narr|con|fac|def|dom|smry|head)>", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(Number|Topic|Description|Narrative|Concept\(s\)|Summary)\s*:", re.IGNORECASE)


def _read_text(path: Path) -> str:
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputError(path, None, f"cannot be read ({error.strerror})", "Check the path.") from None
    try:
        return raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise InputError(path, f"line {line}", f"is not valid UTF-8 (byte {error.start})",
                         "Save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`).") from None


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _plain(markup: str) -> str:
    """Element content as text: inner tags dropped, SGML/HTML entities decoded, outer blanks stripped."""
    return html.unescape(_TAG.sub(" ", markup)).strip()


def _check_outside(text: str, pattern: re.Pattern[str], path: Path, element: str) -> None:
    """Nothing but blanks between elements, and no element left open or closed twice (named by its line)."""
    position = 0
    for match in pattern.finditer(text):
        _check_gap(text, position, match.start(), path, element)
        position = match.end()
    _check_gap(text, position, len(text), path, element)


def _check_gap(text: str, start: int, end: int, path: Path, element: str) -> None:
    gap = text[start:end]
    if gap.strip():
        offset = start + len(gap) - len(gap.lstrip())
        stray = _DOC_TAG if element == "DOC" else _TOP_TAG
        problem = "opens or closes an element without its pair" if stray.search(gap) else "holds text outside"
        raise InputError(path, f"line {_line(text, offset)}", f"{problem} <{element}>…</{element}>",
                         f"Every {'topic' if element == 'top' else 'document'} is one "
                         f"<{element}>…</{element}> element; fix or remove that text.")


def load_trec_documents(path: Path) -> pd.DataFrame:
    """Documents of a TREC SGML file (DOCUMENT_COLUMNS), in file order; each DOC needs one non-blank DOCNO."""
    text = _read_text(path)
    _check_outside(text, _DOC, path, "DOC")
    rows: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for match in _DOC.finditer(text):
        body, line = match.group(1), _line(text, match.start())
        if _DOC_TAG.search(body):
            raise InputError(path, f"line {line}", "opens a <DOC> that is not closed before the next one",
                             "Close every document with </DOC>.")
        numbers = _DOCNO.findall(body)
        if len(numbers) != 1:
            raise InputError(path, f"line {line}", f"is a <DOC> with {len(numbers)} <DOCNO> elements",
                             "Give every document exactly one <DOCNO>id</DOCNO>.")
        doc_id = numbers[0].strip()
        where = f"line {line} (DOCNO {doc_id!r})"
        check_id(doc_id, path, where, "DOCNO")
        if doc_id in first_line:
            raise InputError(path, f"lines {first_line[doc_id]} and {line}", f"repeat DOCNO {doc_id!r}",
                             "Document numbers must be unique: give one of them another DOCNO.")
        first_line[doc_id] = line
        title = _TITLE.search(body)
        texts = _TEXT.findall(body)
        if not texts:
            texts = [_TITLE.sub(" ", _DOCNO.sub(" ", body))]
        rows.append({"doc_id": doc_id, "title": _plain(title.group(2)) if title else "",
                     "text": "\n\n".join(_plain(part) for part in texts), "version": None, "valid_from": None,
                     "valid_to": None, "audience": "public", "lang": None, "metadata": json.dumps({})})
    if not rows:
        raise InputError(path, None, "holds no <DOC> element", "Point `dataset.corpus` at TREC SGML documents.")
    return pd.DataFrame(rows, columns=DOCUMENT_COLUMNS)


def _topic_fields(body: str, path: Path, line: int) -> dict[str, str]:
    """The fields of one <top>: each runs from its tag to the next tag; labels like `Number:` are dropped."""
    fields: dict[str, str] = {}
    tags = list(_FIELD.finditer(body))
    for tag, following in zip(tags, tags[1:] + [None]):
        if tag.group(1):
            continue
        name = tag.group(2).lower()
        content = body[tag.end():following.start() if following else len(body)]
        if name in fields:
            raise InputError(path, f"line {line + body.count(chr(10), 0, tag.start())}",
                             f"repeats the <{name}> field of its topic", "Give each field once per topic.")
        fields[name] = " ".join(_LABEL.sub("", content, count=1).split())
    return fields


def _sgml_topics(text: str, path: Path, field: str) -> dict[str, tuple[str, str]]:
    _check_outside(text, _TOP, path, "top")
    topics: dict[str, tuple[str, str]] = {}
    for match in _TOP.finditer(text):
        line = _line(text, match.start())
        fields = _topic_fields(match.group(1), path, line)
        qid = fields.get("num", "")
        where = f"line {line} (topic {qid!r})"
        if not qid:
            raise InputError(path, f"line {line}", "is a topic without a <num>",
                             "Give every topic `<num> Number: 401`.")
        parts = field.split("+")
        absent = [part for part in parts if not fields.get(part)]
        if absent:
            raise InputError(path, where, f"has no <{absent[0]}> text, which topic_field {field!r} needs",
                             f"Add it, or choose another topic_field ({', '.join(TOPIC_FIELDS)}).")
        _add_topic(topics, qid, " ".join(fields[part] for part in parts), path, where)
    return topics


def _tsv_topics(text: str, path: Path) -> dict[str, tuple[str, str]]:
    topics: dict[str, tuple[str, str]] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        qid, tab, question = line.partition("\t")
        if not tab:
            raise InputError(path, f"line {number}", "has no tab", "Each line must read qid<TAB>question.")
        _add_topic(topics, qid, question, path, f"line {number} (qid {qid!r})")
    return topics


def _add_topic(topics: dict[str, tuple[str, str]], qid: str, question: str, path: Path, where: str) -> None:
    check_id(qid, path, where, "qid")
    if not question.strip():
        raise InputError(path, where, "has a blank question text", "Write the question, or remove the topic.")
    if qid in topics:
        raise InputError(path, f"{topics[qid][1]} and {where}", f"repeat topic {qid!r}",
                         "Topic numbers must be unique within a file.")
    topics[qid] = (question, where)


def load_topics(path: Path, field: str = "title") -> dict[str, tuple[str, str]]:
    """qid -> (question, where) from TREC SGML topics (`field`: title, desc or title+desc) or a qid<TAB>text file.

    A file whose first visible character is `<` is SGML; topic_field applies to SGML topics only."""
    if field not in TOPIC_FIELDS:
        raise InputError(path, None, f"topic_field {field!r} is unknown", f"Use one of: {', '.join(TOPIC_FIELDS)}.")
    text = _read_text(path)
    topics = _sgml_topics(text, path, field) if text.lstrip().startswith("<") else _tsv_topics(text, path)
    if not topics:
        raise InputError(path, None, "holds no topic", "A question-set version needs at least one topic.")
    return topics


def load_trec_questions(topics_path: Path, qrels_path: Path, field: str = "title") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Questions of TREC topics (those the qrels judge, as trec_eval scores them) and their labels, grades checked."""
    topics = load_topics(topics_path, field)
    qrels = read_qrels(qrels_path)
    qids = judged_qids(qrels, topics.keys(), qrels_path, topics_path, "topic",
                       "Use the topics file of the same collection.")
    questions = pd.DataFrame({"qid": qids, "question": [topics[qid][0] for qid in qids], "kind": KIND,
                              "audience": "public", "as_of": None}, columns=QUESTION_COLUMNS)
    labels = qrels.rename(columns={"item_id": "doc_id"}).assign(section=None)[["qid", "doc_id", "section", "grade"]]
    return questions, labels.reset_index(drop=True)
