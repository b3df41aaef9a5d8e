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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.loaders import DOCUMENT_COLUMNS, QUESTION_COLUMNS, check_id
from rankbench.io.qrels import judged_qids
from rankbench.io.trec import read_qrels

KIND = "trec"
TOPIC_FIELDS = ("title", "desc", "title+desc")
_DOC_TAG = re.compile(r"</?DOC>", re.IGNORECASE)


def _element(names: str) -> re.Pattern[str]:
    """`<NAME>content</NAME>` whose content holds no tag of the same name: a match attempt stops at the next such
    tag, so an element left open costs one scan to that tag, never one to the end of the text (linear, not
    quadratic). Group 1 is the name, group 2 the content."""
    return re.compile(rf"<({names})>([^<]*(?:<(?!/?\1>)[^<]*)*)</\1>", re.IGNORECASE)


_DOCNO = _element("DOCNO")
_DOCNO_OPEN = re.compile(r"<DOCNO>", re.IGNORECASE)
_TITLE = _element("TITLE|HEADLINE")
_TEXT = _element("TEXT")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(\s[^<>]*)?/?>")
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


def _plain(markup: str) -> str:
    """Element content as text: inner tags dropped, SGML/HTML entities decoded, outer blanks stripped."""
    return html.unescape(_TAG.sub(" ", markup)).strip()


class _Lines:
    """Line numbers of increasing offsets into one text, each counted on from the last (linear in the text)."""

    def __init__(self, text: str) -> None:
        self.text, self.offset, self.line = text, 0, 1

    def at(self, offset: int) -> int:
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def _elements(text: str, tag: re.Pattern[str], path: Path, element: str) -> Iterator[tuple[int, str]]:
    """(line, content) of each <element>…</element>, in one pass over the element's tags: text outside elements,
    a tag without its pair and an element opened before the last one closed are InputErrors naming the line."""
    lines, position, opened = _Lines(text), 0, None
    what = "topic" if element == "top" else "document"
    fix = f"Every {what} is one <{element}>…</{element}> element; fix or remove that text."
    for match in tag.finditer(text):
        closing = match.group().startswith("</")
        if opened is None:
            gap = text[position:match.start()]
            if gap.strip():
                raise InputError(path, f"line {lines.at(position + len(gap) - len(gap.lstrip()))}",
                                 f"holds text outside <{element}>…</{element}>", fix)
            if closing:
                raise InputError(path, f"line {lines.at(match.start())}",
                                 f"closes an element without its pair <{element}>…</{element}>", fix)
            opened = match
        elif closing:
            yield lines.at(opened.start()), text[opened.end():match.start()]
            opened = None
        else:
            raise InputError(path, f"line {lines.at(opened.start())}",
                             f"opens a <{element}> that is not closed before the next one",
                             f"Close every {what} with </{element}>.")
        position = match.end()
    if opened is not None:
        raise InputError(path, f"line {lines.at(opened.start())}",
                         f"opens an element without its pair <{element}>…</{element}>: it is never closed",
                         f"Close every {what} with </{element}>.")
    rest = text[position:]
    if rest.strip():
        raise InputError(path, f"line {lines.at(position + len(rest) - len(rest.lstrip()))}",
                         f"holds text outside <{element}>…</{element}>", fix)


def load_trec_documents(path: Path) -> pd.DataFrame:
    """Documents of a TREC SGML file (DOCUMENT_COLUMNS), in file order; each DOC needs one non-blank DOCNO."""
    rows: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for line, body in _elements(_read_text(path), _DOC_TAG, path, "DOC"):
        numbers = [number for _, number in _DOCNO.findall(body)]
        opened = len(_DOCNO_OPEN.findall(body))
        if len(numbers) != 1 or opened != 1:
            raise InputError(path, f"line {line}", f"is a <DOC> with {opened} <DOCNO> elements"
                             + ("" if opened == len(numbers) else f", {opened - len(numbers)} of them not closed"),
                             "Give every document exactly one <DOCNO>id</DOCNO>.")
        doc_id = numbers[0].strip()
        where = f"line {line} (DOCNO {doc_id!r})"
        check_id(doc_id, path, where, "DOCNO")
        if doc_id in first_line:
            raise InputError(path, f"lines {first_line[doc_id]} and {line}", f"repeat DOCNO {doc_id!r}",
                             "Document numbers must be unique: give one of them another DOCNO.")
        first_line[doc_id] = line
        title = _TITLE.search(body)
        texts = [content for _, content in _TEXT.findall(body)]
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
    topics: dict[str, tuple[str, str]] = {}
    for line, body in _elements(text, _TOP_TAG, path, "top"):
        fields = _topic_fields(body, path, line)
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
