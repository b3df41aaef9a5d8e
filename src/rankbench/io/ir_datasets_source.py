"""Datasets of ir_datasets, by id, read through its own API (docs_iter, queries_iter, qrels_iter) and its own cache.

rankbench only reads what ir_datasets has cached (IR_DATASETS_HOME, default ~/.ir_datasets): a download that
ir_datasets would start is refused at once with the id and the command that fetches it, so a run without network
fails in a second instead of waiting on timeouts, and no job downloads behind the user's back.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.loaders import DOCUMENT_COLUMNS, LABEL_COLUMNS, QUESTION_COLUMNS, check_id
from rankbench.io.qrels import check_grades

KIND = "ir_datasets"
_INSTALL = "Install the extra: pip install -e '.[ir_datasets]' (ir-datasets==0.6.3)."


def installed_version() -> str:
    """The installed ir_datasets version (it names what a run read, with the id); an InputError when absent."""
    try:
        return importlib.metadata.version("ir_datasets")
    except importlib.metadata.PackageNotFoundError:
        raise InputError(None, "dataset.format", "is ir_datasets, which is not installed", _INSTALL) from None


def source(dataset_id: str, part: str | None = None) -> str:
    """How errors name an ir_datasets dataset (it has no file of its own)."""
    return f"ir_datasets {dataset_id!r}" + (f" ({part})" if part else "")


def fetch_command(dataset_id: str) -> str:
    """A shell command that makes ir_datasets download and cache docs, queries and qrels of an id."""
    return (f"python -c \"import ir_datasets; d = ir_datasets.load('{dataset_id}'); "
            "[sum(1 for _ in getattr(d, p + '_iter')()) for p in ('docs', 'queries', 'qrels') if d.has(p)]\"")


class _DownloadRefused(RuntimeError):
    """Raised in place of any download ir_datasets starts while rankbench reads its cache."""


def _numbered(records: Iterable[Any], at: dict[str, str], part: str) -> Iterator[tuple[int, Any]]:
    """(number, record) from 1, keeping `at` on the record being read, so a parse error inside ir_datasets is named."""
    at["where"] = f"{part} record 1"
    for number, record in enumerate(records, start=1):
        yield number, record
        at["where"] = f"{part} record {number + 1}"


@contextlib.contextmanager
def _cache_only(dataset_id: str, part: str, at: dict[str, str] | None = None) -> Iterator[None]:
    """Run ir_datasets with its network sources refused; every failure inside becomes an InputError naming the id
    (and the record being read, kept in `at` by _numbered)."""
    try:
        import ir_datasets.util.download as download
    except ImportError:
        raise InputError(source(dataset_id), None, "cannot be read: ir_datasets is not installed", _INSTALL) from None
    refused: list[str] = []

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        refused.append(str(getattr(self, "url", None) or getattr(self, "uri", "")))
        raise _DownloadRefused(f"rankbench reads the ir_datasets cache only; not downloading {refused[-1]}")

    sources = (download.RequestsDownload, download.GoogleDriveDownload, download.GoogleCloudBucketStream)
    originals = {cls: cls.__dict__["stream"] for cls in sources}
    for cls in sources:
        cls.stream = refuse
    try:
        yield
    except InputError:
        raise
    except Exception as error:
        if refused:
            raise InputError(source(dataset_id, part), None, f"is not in the ir_datasets cache (it would download "
                             f"{refused[0]})", f"Download it once on a machine with network, with ir_datasets' own "
                             f"cache (IR_DATASETS_HOME, default ~/.ir_datasets): {fetch_command(dataset_id)}") from None
        raise InputError(source(dataset_id, part), (at or {}).get("where"), f"cannot be read by ir_datasets "
                         f"({type(error).__name__}: {error})", "Check the id (`ir_datasets list`) and its files "
                         "(`ir_datasets clean` removes a broken cache).") from None
    finally:
        for cls, stream in originals.items():
            cls.stream = stream


def _load(dataset_id: str, *parts: str) -> Any:
    """The ir_datasets dataset of an id, which must provide every one of `parts` (docs, queries, qrels)."""
    import ir_datasets

    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise InputError(source(dataset_id), None, "is not a dataset id ir_datasets knows",
                         "Name one listed by `ir_datasets list` (e.g. beir/scifact/test), see ir-datasets.com."
                         ) from None
    for part in parts:
        if not dataset.has(part):
            raise InputError(source(dataset_id), None, f"provides no {part}",
                             "Name an id that has them; a split of a collection usually has queries and qrels "
                             "(e.g. beir/scifact/test, not beir/scifact).")
    return dataset


def _text(record: Any, field: str) -> str:
    """The record's `field` when it is text, else ir_datasets' default_text() (e.g. a TREC topic's title)."""
    value = getattr(record, field, None)
    return value if isinstance(value, str) else record.default_text()


def _check_unique(ids: list[str], where: list[str], path: str, field: str) -> None:
    """No id twice (the error names both records)."""
    seen: dict[str, int] = {}
    for i, value in enumerate(ids):
        if value in seen:
            raise InputError(path, f"{where[seen[value]]} and {where[i]}", f"repeat {field} {value!r}",
                             f"ir_datasets gave the same {field} twice; report it to the dataset's maintainers.")
        seen[value] = i


def load_ir_documents(dataset_id: str) -> pd.DataFrame:
    """The documents of an id (DOCUMENT_COLUMNS): doc_id, title (when the type has one), text (or default_text()),
    other fields as JSON metadata."""
    path = source(dataset_id, "docs")
    rows, ids, where = [], [], []
    at: dict[str, str] = {}
    with _cache_only(dataset_id, "docs", at):
        for number, document in _numbered(_load(dataset_id, "docs").docs_iter(), at, "docs"):
            record = f"document {number} (doc_id {document.doc_id!r})"
            check_id(document.doc_id, path, record, "doc_id")
            fields = document._asdict()
            title = fields.pop("title", None)
            extra = {key: value for key, value in fields.items() if key not in ("doc_id", "text")}
            rows.append({"doc_id": document.doc_id, "title": title if isinstance(title, str) else "",
                         "text": _text(document, "text"), "version": None, "valid_from": None, "valid_to": None,
                         "audience": "public", "lang": None,
                         "metadata": json.dumps(extra, sort_keys=True, ensure_ascii=False, default=str)})
            ids.append(document.doc_id)
            where.append(f"document {number}")
    if not rows:
        raise InputError(path, None, "holds no document", "Name an id whose docs are not empty.")
    _check_unique(ids, where, path, "doc_id")
    return pd.DataFrame(rows, columns=DOCUMENT_COLUMNS)


def load_ir_questions(dataset_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Questions of an id (the queries its qrels judge, as for a BEIR split) and their labels, grades checked."""
    queries_path, qrels_path = source(dataset_id, "queries"), source(dataset_id, "qrels")
    texts: dict[str, tuple[str, str]] = {}
    rows, where = [], []
    at: dict[str, str] = {}
    with _cache_only(dataset_id, "queries and qrels", at):
        dataset = _load(dataset_id, "queries", "qrels")
        for number, query in _numbered(dataset.queries_iter(), at, "queries"):
            record = f"query {number} (query_id {query.query_id!r})"
            if query.query_id in texts:
                raise InputError(queries_path, f"{texts[query.query_id][1]} and {record}", "repeat a query_id",
                                 "ir_datasets gave the same query twice; report it to the dataset's maintainers.")
            texts[query.query_id] = (_text(query, "text"), record)
        for number, qrel in _numbered(dataset.qrels_iter(), at, "qrels"):
            rows.append({"qid": qrel.query_id, "doc_id": qrel.doc_id, "section": None, "grade": qrel.relevance})
            where.append(f"record {number} (query {qrel.query_id!r}, document {qrel.doc_id!r})")
    labels = pd.DataFrame(rows, columns=LABEL_COLUMNS)
    if labels.empty:
        raise InputError(qrels_path, None, "holds no judgement", "Name an id with relevance judgements.")
    for field, column in (("query_id", "qid"), ("doc_id", "doc_id")):
        for value, record in zip(labels[column], where):
            check_id(value, qrels_path, record, field)
    labels["grade"] = check_grades(labels["grade"].tolist(), qrels_path, where)
    repeated = labels.duplicated(["qid", "doc_id"], keep=False).to_numpy()
    if repeated.any():
        first, second = (where[i] for i in repeated.nonzero()[0][:2])
        raise InputError(qrels_path, f"{first} and {second}", "judge the same query and document",
                         "Keep one grade per query and document.")
    qids = list(dict.fromkeys(labels["qid"]))
    missing = [qid for qid in qids if qid not in texts]
    if missing:
        raise InputError(qrels_path, f"query {missing[0]!r}", f"judges {len(missing)} query id(s) its queries lack",
                         "Name an id whose queries and qrels belong together.")
    for qid in qids:
        if not texts[qid][0].strip():
            raise InputError(queries_path, texts[qid][1], "has a blank text", "Name an id whose queries have text.")
    questions = pd.DataFrame({"qid": qids, "question": [texts[qid][0] for qid in qids], "kind": KIND,
                              "audience": "public", "as_of": None}, columns=QUESTION_COLUMNS)
    return questions, labels


def check_same_docs(corpus_id: str, version_id: str) -> None:
    """A version's id ranks the corpus's documents: ir_datasets gives both ids the same docs (or the version none)."""
    import ir_datasets

    with _cache_only(version_id, "docs"):
        if not _load(version_id).has("docs"):
            return
        corpus_parent, version_parent = ir_datasets.docs_parent_id(corpus_id), ir_datasets.docs_parent_id(version_id)
    if corpus_parent != version_parent:
        raise InputError(source(version_id), None, f"judges the documents of {version_parent!r}, not those of "
                         f"dataset.id {corpus_id!r} ({corpus_parent!r})",
                         "Name versions whose ids share the corpus's docs (e.g. beir/scifact/test with beir/scifact).")


def records_digest(*frames: pd.DataFrame) -> str:
    """sha256 of the records loaded from an id: what a version's results were made from (there is no file to hash)."""
    digest = hashlib.sha256()
    for frame in frames:
        digest.update(frame.to_json(orient="split", index=False, force_ascii=False).encode("utf-8"))
    return digest.hexdigest()


def corpus_digest(dataset_id: str, version: str) -> str:
    """What documents.parquet was loaded from: the id and the ir_datasets version (its downloads are md5-checked).

    Hashing the id, not the records, lets a start of run skip reading a corpus of millions of documents again."""
    return hashlib.sha256(f"ir_datasets=={version} {dataset_id}".encode()).hexdigest()
