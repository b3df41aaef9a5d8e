"""`type: http`: any search endpoint as a method. Each question fills a request template (query string and/or JSON
body), the answer maps to ids and scores through two path selectors, and every answer is cached by (endpoint,
request), so a rerun sends nothing. Presets give the OpenSearch/Elasticsearch `_search` and Solr `select` shapes."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.files import write_text
from rankbench.io.http import api_key, check_base_url, send
from rankbench.io.loaders import QUESTION_COLUMNS
from rankbench.io.progress import Progress
from rankbench.io.trec import run_from_frame
from rankbench.redaction import excerpt, redact
from rankbench.retrieval.registry import HTTP_LIBRARY_KEYS
from rankbench.retrieval.response_paths import PathError, parse_path, select

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# What a template may name: the question's text, the hits asked for, its id and the other columns of a question.
PLACEHOLDERS = ("query", "hits", *[column for column in QUESTION_COLUMNS if column != "question"])
# Placeholders renamed: old name -> (new name, what it stands for), so a template still naming the old is told the new.
RENAMED_PLACEHOLDERS = {"k": ("hits", "the number of hits asked for")}
_ES_SEARCH: dict[str, Any] = {"http_method": "POST", "params": {},
                              "body": {"query": {"match": {"text": "{query}"}}, "size": "{hits}", "_source": False},
                              "ids": "hits.hits[*]._id", "scores": "hits.hits[*]._score"}
PRESETS: dict[str, dict[str, Any]] = {
    "opensearch": _ES_SEARCH,
    "elasticsearch": _ES_SEARCH,
    "solr": {"http_method": "GET", "body": None,
             "params": {"q": "{query}", "defType": "edismax", "qf": "text", "rows": "{hits}", "fl": "id,score",
                        "wt": "json"},
             "ids": "response.docs[*].id", "scores": "response.docs[*].score"},
}
MAX_K = 10_000


@dataclass(frozen=True)
class HttpSearchSpec:
    """A method's endpoint (`url`, no credentials), request (`params` for the query string, a JSON `body`, `headers`
    naming the environment variables that hold their values), the selectors of ids and scores in the answer,
    `id_pattern` (a regex whose group `id` is the document id in a returned id), hits asked for, and how requests are
    sent (in flight at once, seconds each in all, retries, backoff)."""

    url: str
    ids: str
    scores: str
    hits: int
    http_method: str = "GET"
    params: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    id_pattern: str | None = None
    version_header: str = "Server"
    concurrency: int = 4
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 1.0

    @property
    def endpoint(self) -> str:
        """The URL without its query string (secrets redacted): how pages, errors and records name the endpoint."""
        parts = urlsplit(self.url)
        return redact(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))


def _merged(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A method's own settings over its preset's; a body means POST unless `http_method` says otherwise."""
    merged = {**PRESETS.get(spec.get("preset") or "", {}),
              **{key: value for key, value in spec.items() if value is not None}}
    if "http_method" not in merged and merged.get("body") is not None:
        merged["http_method"] = "POST"
    return {key: value for key, value in merged.items() if key in HttpSearchSpec.__dataclass_fields__}


def http_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The request a method sends and how, its preset's and the library's defaults filled in (effective config;
    `hits` unset means the evaluation depth)."""
    defaults = {key: value for key, value in asdict(HttpSearchSpec(url="", ids="", scores="", hits=0)).items()
                if key in HTTP_LIBRARY_KEYS}
    return {key: value for key, value in {**defaults, **_merged(spec)}.items()
            if key in (*HTTP_LIBRARY_KEYS, "ids", "scores")}


def http_spec(spec: Mapping[str, Any], depth: int) -> HttpSearchSpec:
    """A method's settings, its preset's under its own; `hits` defaults to the evaluation depth."""
    return HttpSearchSpec(**{"hits": depth, **_merged(spec)})


def template_names(template: Any) -> set[str]:
    """The placeholders a template (string, list or mapping, nested) names."""
    if isinstance(template, str):
        return set(PLACEHOLDER.findall(template.replace("{{", "").replace("}}", "")))
    if isinstance(template, Mapping):
        return set().union(*map(template_names, template.values())) if template else set()
    if isinstance(template, list):
        return set().union(*map(template_names, template)) if template else set()
    return set()


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """The template with its placeholders replaced; a string that is one placeholder alone takes the value as it is
    (`"size": "{hits}"` sends a number), `{{` and `}}` are literal braces."""
    if isinstance(template, str):
        alone = PLACEHOLDER.fullmatch(template)
        if alone:
            return values[alone[1]]
        filled = PLACEHOLDER.sub(lambda match: str(values[match[1]]), template.replace("{{", "\0").replace("}}", "\1"))
        return filled.replace("\0", "{").replace("\1", "}")
    if isinstance(template, Mapping):
        return {key: fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, values) for value in template]
    return template


def check_http_method(spec: Mapping[str, Any], dataset: Mapping[str, Any], where: str, source: str) -> None:
    """At start (the registry's `check`): the URL holds no credentials, the answer's selectors parse, the templates
    name only known placeholders, the headers' variables are set, and `id_pattern` has its `id` group."""
    for key in ("ids", "scores"):
        if key not in _merged(spec):
            raise InputError(source, where, f"sets no `{key}` and no preset",
                             "Give `preset: opensearch|elasticsearch|solr`, or `ids` and `scores` (paths into the "
                             "answer, e.g. hits.hits[*]._id and hits.hits[*]._score).")
    settings = http_spec(spec, 1)
    if not 1 <= spec.get("hits", 1) <= MAX_K:
        raise InputError(source, f"{where}.hits", f"is {spec['hits']}, not a number of hits from 1 to {MAX_K}",
                         "Give the hits to ask for, or leave `hits` out to ask for the evaluation depth.")
    check_base_url(settings.url, where, source, "url", "give secrets as headers whose values come from environment "
                   "variables ({setting}.headers: {{Authorization: MY_SERVICE_TOKEN}})")
    for key in ("ids", "scores"):
        try:
            parse_path(getattr(settings, key))
        except PathError as error:
            raise InputError(source, f"{where}.{key}", str(error), "See docs/how-to/search-service.md, "
                             "\"Mapping the answer\".") from None
    for key in ("params", "body"):
        unknown = sorted(template_names(getattr(settings, key)) - set(PLACEHOLDERS))
        renamed = [name for name in unknown if name in RENAMED_PLACEHOLDERS]
        if renamed:
            new, meaning = RENAMED_PLACEHOLDERS[renamed[0]]
            raise InputError(source, f"{where}.{key}", f"names {{{renamed[0]}}}, which is now {{{new}}} ({meaning})",
                             f"Rename it to {{{new}}}.")
        if unknown:
            raise InputError(source, f"{where}.{key}", f"names {{{unknown[0]}}}, which no question has",
                             f"Use {', '.join('{' + name + '}' for name in PLACEHOLDERS)} (write {{{{ and }}}} for "
                             "literal braces).")
    for header, variable in settings.headers.items():
        api_key(variable, where, source, f"headers.{header}")
    if settings.id_pattern is not None:
        try:
            pattern = re.compile(settings.id_pattern)
        except re.error as error:
            raise InputError(source, f"{where}.id_pattern", f"is no regular expression ({error})",
                             "Fix it, e.g. `^(?P<id>[^#]+)#` for ids such as doc12#3.") from None
        if "id" not in pattern.groupindex:
            raise InputError(source, f"{where}.id_pattern", "has no group named `id`",
                             "Name the part that is the document id: (?P<id>...).")


@dataclass(frozen=True)
class Answer:
    """One question's answer: the ids and scores it ranked, how long it took (ms), the server's version header, and
    when it arrived (ISO 8601, UTC)."""

    ids: list[str]
    scores: list[float]
    latency_ms: float
    server: str | None
    received: str
    cached: bool = False  # from the response cache: no request was sent this time


class HttpSearch:
    """Questions → answers from one endpoint; an answer already in the cache (same endpoint, query string and body)
    is never asked for again."""

    def __init__(self, spec: HttpSearchSpec, cache: str | Path, name: str) -> None:
        self.spec, self.cache, self.setting = spec, Path(cache), f"methods.{name}"
        self.where = f"method {name} at {spec.endpoint}"
        self.headers = {header: api_key(variable, self.setting, None, f"headers.{header}")
                        for header, variable in spec.headers.items()}
        if spec.body is not None:
            self.headers["Content-Type"] = "application/json"
        self.sent = 0

    def request(self, values: Mapping[str, Any]) -> tuple[str, bytes | None]:
        """The URL (its query string filled in) and the JSON body of one question's request."""
        url = self.spec.url
        params = fill(dict(self.spec.params), values)
        if params:
            url += ("&" if urlsplit(url).query else "?") + urlencode(params)
        body = None if self.spec.body is None else json.dumps(fill(self.spec.body, values), sort_keys=True).encode()
        return url, body

    def answer(self, values: Mapping[str, Any]) -> Answer:
        """One question's answer, from the cache or else the endpoint (cached only once it is checked). A cached
        answer that no longer passes the checks (cached by an older rankbench, or before the selectors changed) is
        dropped and asked for again: a refused answer is never replayed."""
        url, body = self.request(values)
        key = hashlib.sha256(json.dumps([self.spec.http_method, url, (body or b"").decode()]).encode()).hexdigest()
        path = self.cache / f"{key}.json"
        if path.exists():
            try:
                return replace(self._parse(json.loads(path.read_text(encoding="utf-8")), values["qid"]), cached=True)
            except (InputError, ValueError, KeyError):
                logging.warning("%s, question %s: the cached answer is refused now; asking again", self.where,
                                values["qid"])
                path.unlink(missing_ok=True)
        entry = self.ask(values)
        answer = self._parse(entry, values["qid"])  # a response that does not map is never cached
        write_text(json.dumps(entry, sort_keys=True), path)
        self.sent += 1
        return answer

    def ask(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """One question sent to the endpoint, no cache: the response (secrets masked), its latency (ms, from the
        request sent to the body read), the server's version header and when it arrived."""
        url, body = self.request(values)
        started = time.perf_counter()
        try:
            raw, headers = send(url, body, self.headers, self.spec.http_method, self.spec.timeout, self.spec.retries,
                                self.spec.backoff, self.setting, f"Check {self.setting} (url, params, body, headers) "
                                "and the server's log.", "url")
        except InputError as error:
            raise InputError(self.where, f"question {values['qid']}", error.problem, error.fix) from None
        latency = (time.perf_counter() - started) * 1000
        try:  # masked before anything is kept: the cache is a file, and the run's provenance a record
            response = json.loads(redact(raw.decode(json.detect_encoding(raw), "replace")))
        except ValueError:
            raise InputError(self.where, f"question {values['qid']}", f"answered with a body that is not JSON "
                             f"({excerpt(raw, 120)!r})", f"Point {self.setting}.url at the "
                             "search API (e.g. …/_search, …/select?wt=json), not a page.") from None
        return {"response": response, "latency_ms": round(latency, 3),
                "server": redact(headers[self.spec.version_header]) if headers.get(self.spec.version_header)
                else None,
                "received": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def answered(self, values: Mapping[str, Any]) -> Answer:
        """One question answered by the endpoint itself, no cache read or written (the serving probe's call)."""
        return self._parse(self.ask(values), values["qid"])

    def _parse(self, entry: Mapping[str, Any], qid: str) -> Answer:
        where = f"question {qid}"
        try:
            ids, scores = select(entry["response"], self.spec.ids), select(entry["response"], self.spec.scores)
        except PathError as error:
            raise InputError(self.where, where, f"answered with a response that {self.setting}.ids/scores do not "
                             f"fit: {error}", "Fix the selectors (or the preset) to the server's response shape: "
                             "see docs/how-to/search-service.md.") from None
        if len(ids) != len(scores):
            raise InputError(self.where, where, f"answered {len(ids)} ids but {len(scores)} scores",
                             f"Point {self.setting}.ids and .scores at fields of the same list of hits.")
        bad = [value for value in scores if isinstance(value, bool) or not isinstance(value, (int, float))]
        bad += [value for value in ids if not isinstance(value, (str, int)) or isinstance(value, bool)]
        if bad:
            raise InputError(self.where, where, f"answered {bad[0]!r} where an id (text) or score (number) belongs",
                             "A server that sorts by a field gives no score (e.g. _score null): rank by "
                             "relevance, or point `scores` at a number.")
        infinite = [value for value in scores if not math.isfinite(value)]
        if infinite:
            raise InputError(self.where, where, f"answered the score {infinite[0]}, which is not a finite number",
                             "Fix the service's scoring (or point `scores` at another field); the answer was not "
                             "cached, so the next run asks the service again.")
        return Answer([str(value) for value in ids], [float(value) for value in scores], entry["latency_ms"],
                      entry["server"], entry["received"])


def question_values(questions: pd.DataFrame, hits: int) -> list[dict[str, Any]]:
    """What each question's request is filled with: its text as {query}, {hits}, and its other columns ("" for
    none)."""
    frame = questions.rename(columns={"question": "query"})
    frame = frame[[column for column in PLACEHOLDERS if column in frame]].astype(object)
    return [{**{key: "" if pd.isna(value) else value for key, value in row.items()}, "hits": hits}
            for row in frame.to_dict("records")]


def search_run(spec: HttpSearchSpec, questions: pd.DataFrame, depth: int, cache: str | Path, name: str,
               chunks: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict[str, Any], list[str]]:
    """The run of every question (documents in the endpoint's order and scores, cut at the evaluation depth) and
    what the run file records beside it: `provenance` (the endpoint, the server's version header, when the answers
    arrived) and `latency_ms` of each question (as measured when it was sent). With `chunks` (chunk_id, doc_id) the
    returned ids are chunk ids, each ranked under its document. Third, the questions answered from the cache. Any
    failure raises before anything is returned."""
    search = HttpSearch(spec, cache, name)
    values = question_values(questions, spec.hits)
    pool = ThreadPoolExecutor(spec.concurrency)
    futures = {pool.submit(search.answer, value): value["qid"] for value in values}
    try:
        with Progress(len(futures), f"search {len(futures)} questions via {spec.endpoint}", "questions") as progress:
            for future in as_completed(futures):
                future.result()  # raises the first failure
                progress.update(1)
    finally:
        for future in futures:
            future.cancel()
        pool.shutdown(wait=True)
    answers = {qid: future.result() for future, qid in futures.items()}
    latency = {qid: answers[qid].latency_ms for qid in sorted(answers)}
    record = {"provenance": _provenance(answers, spec, search.sent), "latency_ms": latency}
    return _run(answers, spec, depth, name, chunks), record, sorted(qid for qid in answers if answers[qid].cached)


def _run(answers: Mapping[str, Answer], spec: HttpSearchSpec, depth: int, name: str,
         chunks: pd.DataFrame | None) -> pd.DataFrame:
    frame = pd.DataFrame({"qid": [qid for qid, answer in answers.items() for _ in answer.ids],
                          "doc_id": [item for answer in answers.values() for item in answer.ids],
                          "score": [score for answer in answers.values() for score in answer.scores],
                          "order": [i for answer in answers.values() for i in range(len(answer.ids))]})
    if spec.id_pattern is not None:
        found = frame["doc_id"].str.extract(spec.id_pattern)["id"]
        frame = frame.assign(doc_id=found.fillna(frame["doc_id"]))
    frame = frame.sort_values(["qid", "order"], kind="stable")
    if chunks is not None:  # a chunk ranks under its document (an id the chunker lacks stands for itself)
        documents = frame["doc_id"].map(dict(zip(chunks["chunk_id"], chunks["doc_id"])))
        frame = frame.assign(chunk_id=frame["doc_id"], doc_id=documents.fillna(frame["doc_id"]))
    # the endpoint's own order, each item once (at its best hit, e.g. a document at its first chunk)
    frame = frame.drop_duplicates(["qid", "doc_id" if chunks is None else "chunk_id"])
    # ranked by score as trec_eval ranks them, like an imported run
    run = run_from_frame(frame.drop(columns="order"), f"the answers of method {name} ({spec.endpoint})")
    return run[run["rank"] <= depth].reset_index(drop=True)


def engine_entry(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The page header's entry of the service an http run asked (its provenance): the endpoint (no query string,
    secrets redacted) and the server's version header as it answered (– when it sent none)."""
    return {"engine": "search endpoint", "facts": [["endpoint", provenance["endpoint"]],
                                                   ["server", ", ".join(provenance["server"]) or "–"]]}


def _provenance(answers: Mapping[str, Answer], spec: HttpSearchSpec, sent: int) -> dict[str, Any]:
    received = sorted(answer.received for answer in answers.values())
    servers = sorted({answer.server for answer in answers.values() if answer.server})
    if sent:
        logging.info("%s: %d requests sent, %d answers from the cache", spec.endpoint, sent, len(answers) - sent)
    return {"endpoint": spec.endpoint, "http_method": spec.http_method, "server": servers,
            "queried": {"first": received[0], "last": received[-1]} if received else None,
            "questions": len(answers)}
