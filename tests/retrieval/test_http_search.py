"""`type: http` against real servers on the loopback address: Xapian Omega (a real search engine) for the answers,
the cache and malformed JSON; a server that answers 503, one that never answers and a closed port for the other
failures, each one message naming the method and the endpoint, with nothing returned or cached."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from http_servers import ScriptedServer, scripted, silent
from omega_server import NEEDS_OMEGA, OMEGA_PARAMS, free_port, omega_server

from rankbench.errors import InputError
from rankbench.io.loaders import load_corpus, load_questions
from rankbench.retrieval.http_search import PRESETS, check_http_method, fill, http_settings, http_spec, search_run
from rankbench.retrieval.response_paths import PathError, parse_path, select

__all__ = ["scripted", "silent"]  # fixtures
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"
TOKEN_VARIABLE = "RANKBENCH_TEST_SEARCH_TOKEN"
TOKEN = "st-0a1b2c3d4e5f6789"


@pytest.fixture(scope="module")
def corpus() -> list[tuple[str, str]]:
    documents = load_corpus(MINI / "corpus.jsonl")
    return list(zip(documents["doc_id"], documents["title"] + " " + documents["text"]))


@pytest.fixture
def questions() -> pd.DataFrame:
    return load_questions(MINI / "questions" / "v1.jsonl")[0]


@pytest.fixture
def omega(corpus: list[tuple[str, str]]):
    with omega_server(corpus) as url:
        yield url


def omega_method(url: str, **settings: object) -> dict:
    return {"type": "http", "url": url, "params": dict(OMEGA_PARAMS), "ids": "hits[*].id", "scores": "hits[*].score",
            "version_header": "X-Omega-Version", "timeout": 10.0, "retries": 0, "backoff": 0.01, **settings}


@NEEDS_OMEGA
def test_omega_ranks_the_questions_and_a_rerun_with_the_server_gone_sends_nothing(
        corpus: list[tuple[str, str]], questions: pd.DataFrame, tmp_path: Path) -> None:
    with omega_server(corpus) as url:
        spec = http_spec(omega_method(url), 10)
        run, record, cached = search_run(spec, questions, 10, tmp_path / "cache", "omega")
    top = run[run["rank"] == 1].set_index("qid")["doc_id"]
    assert top["q2"] == "error-codes"  # the only document holding BAT-0x1F
    assert set(run["doc_id"]) <= {doc for doc, _ in corpus} and set(run["qid"]) <= set(questions["qid"])
    for _, ranked in run.groupby("qid"):
        assert ranked["score"].is_monotonic_decreasing and list(ranked["rank"]) == list(range(1, len(ranked) + 1))
    provenance = record["provenance"]
    assert provenance["endpoint"] == url and provenance["http_method"] == "GET"
    assert provenance["server"] and provenance["server"][0].startswith("xapian-omega 1.")
    assert provenance["queried"]["first"] <= provenance["queried"]["last"]
    assert set(record["latency_ms"]) == set(questions["qid"]) and min(record["latency_ms"].values()) > 0
    assert len(list((tmp_path / "cache").iterdir())) == len(questions)
    # The server is gone: the same run, provenance and latencies come from the cache alone.
    again, record_again, cached_again = search_run(spec, questions, 10, tmp_path / "cache", "omega")
    pd.testing.assert_frame_equal(run, again)
    assert record_again == record
    assert cached == [] and cached_again == sorted(questions["qid"])  # the cost page counts these as no work


@NEEDS_OMEGA
def test_an_answer_that_is_not_json_is_one_message_and_is_not_cached(omega: str, questions: pd.DataFrame,
                                                                     tmp_path: Path) -> None:
    spec = http_spec(omega_method(omega, params={**OMEGA_PARAMS, "FMT": "broken"}), 10)
    with pytest.raises(InputError, match=rf"^method omega at {omega}, question q\d: answered with a body that is not "
                                         r"JSON \('\{\"total\""):
        search_run(spec, questions, 10, tmp_path / "cache", "omega")
    assert not list((tmp_path / "cache").glob("*.json"))


def test_a_dead_endpoint_is_one_message_naming_the_method_and_endpoint(questions: pd.DataFrame,
                                                                        tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/search"
    with pytest.raises(InputError, match=rf"^method svc at {url}, question q\d: is unreachable \(.*refused.*\)\. Start "
                                         r"the server, or fix methods\.svc\.url"):
        search_run(http_spec(omega_method(url), 10), questions, 10, tmp_path / "cache", "svc")
    assert not (tmp_path / "cache").exists()


def test_a_5xx_is_retried_then_one_message(scripted: ScriptedServer, questions: pd.DataFrame, tmp_path: Path) -> None:
    scripted.answer((503, {"Retry-After": "0"}, b"overloaded"))
    url = scripted.origin + "/search"
    with pytest.raises(InputError, match=rf"^method svc at {url}, question q\d: answered HTTP 503 after 2 attempts "
                                         r"\(overloaded\)\. Check methods\.svc"):
        search_run(http_spec(omega_method(url, retries=1, concurrency=1), 10), questions.head(1), 10,
                   tmp_path / "cache", "svc")
    assert len(scripted.seen) == 2 and not (tmp_path / "cache").exists()


def test_a_server_that_never_answers_times_out_with_one_message(silent: str, questions: pd.DataFrame,
                                                                tmp_path: Path) -> None:
    url = silent + "/search"
    with pytest.raises(InputError, match=rf"^method svc at {url}, question q\d: did not answer within 0\.3 s \(1 "
                                         r"attempts\)\. Raise methods\.svc\.timeout"):
        search_run(http_spec(omega_method(url, timeout=0.3), 10), questions, 10, tmp_path / "cache", "svc")


def test_a_post_fills_the_body_sends_the_header_from_the_environment_and_keeps_the_secret_out(
        scripted: ScriptedServer, questions: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_VARIABLE, TOKEN)
    scripted.answer((200, {"Server": "search/2.1"}, {"hits": {"hits": [{"_id": "returns-2025#0", "_score": 2.0},
                                                                      {"_id": "returns-2025#1", "_score": 1.5},
                                                                      {"_id": "elsewhere", "_score": 1.0}]}}))
    method = {"type": "http", "url": scripted.origin + "/idx/_search", "preset": "opensearch",
              "body": {"query": {"match": {"text": "{query}"}}, "size": "{hits}", "filter": "{audience}/{qid}",
                       "literal": "{{kept}}"},
              "headers": {"Authorization": TOKEN_VARIABLE}, "id_pattern": r"^(?P<id>[^#]+)#", "concurrency": 1}
    check_http_method(method, {}, "methods.svc", "config.yaml")
    run, record, _ = search_run(http_spec(method, 7), questions.head(1), 7, tmp_path / "cache", "svc")
    request = scripted.seen[0]
    assert request["method"] == "POST" and request["headers"]["Authorization"] == TOKEN
    assert json.loads(request["body"]) == {"query": {"match": {"text": questions["question"].iloc[0]}}, "size": 7,
                                           "filter": "public/q1", "literal": "{kept}"}
    # chunk ids map to their document, kept once at its best hit; a foreign id stays (reported by the job)
    assert list(run["doc_id"]) == ["returns-2025", "elsewhere"] and list(run["score"]) == [2.0, 1.0]
    assert record["provenance"]["server"] == ["search/2.1"]
    stored = "".join(path.read_text() for path in (tmp_path / "cache").iterdir()) + json.dumps(record)
    assert TOKEN not in stored and TOKEN_VARIABLE not in stored


def test_chunk_ids_rank_under_their_documents(scripted: ScriptedServer, questions: pd.DataFrame,
                                              tmp_path: Path) -> None:
    scripted.answer((200, {}, {"hits": [{"id": "returns-2025#refund", "score": 3.0},
                                        {"id": "returns-2025#deadline", "score": 2.0},
                                        {"id": "error-codes#bat", "score": 1.0}]}))
    chunks = pd.DataFrame({"chunk_id": ["returns-2025#refund", "returns-2025#deadline", "error-codes#bat"],
                           "doc_id": ["returns-2025", "returns-2025", "error-codes"]})
    method = omega_method(scripted.origin + "/s", params={"q": "{query}"}, concurrency=1)
    run, _, _ = search_run(http_spec(method, 10), questions.head(1), 10, tmp_path / "cache", "svc", chunks)
    assert list(run["chunk_id"]) == list(chunks["chunk_id"]) and list(run["doc_id"]) == list(chunks["doc_id"])
    assert list(run["rank"]) == [1, 2, 3]


@pytest.mark.parametrize("score", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_a_score_that_is_no_finite_number_is_refused_before_it_is_cached(
        scripted: ScriptedServer, questions: pd.DataFrame, tmp_path: Path, score: bytes) -> None:
    scripted.answer((200, {}, b'{"hits": [{"id": "returns-2025", "score": 2.0}, {"id": "faq", "score": ' + score
                     + b"}]}"))
    method = omega_method(scripted.origin + "/s", params={"q": "{query}"}, concurrency=1)
    with pytest.raises(InputError, match=r"^method svc at http://127\.0\.0\.1:\d+/s, question q1: answered the score "
                                         r"-?(nan|inf), which is not a finite number\. Fix the service's scoring .*the "
                                         r"answer was not cached, so the next run asks the service again\.$"):
        search_run(http_spec(method, 10), questions.head(1), 10, tmp_path / "cache", "svc")
    assert not list((tmp_path / "cache").glob("*.json"))
    # The service is fixed: the next run asks it again and ranks its answer.
    scripted.answer((200, {}, {"hits": [{"id": "returns-2025", "score": 2.0}, {"id": "faq", "score": 1.0}]}))
    run, _, cached = search_run(http_spec(method, 10), questions.head(1), 10, tmp_path / "cache", "svc")
    assert list(run["doc_id"]) == ["returns-2025", "faq"] and cached == [] and len(scripted.seen) == 2


def test_a_cached_answer_refused_now_is_asked_for_again_never_replayed(
        scripted: ScriptedServer, questions: pd.DataFrame, tmp_path: Path) -> None:
    scripted.answer((200, {}, {"hits": [{"id": "returns-2025", "score": 2.0}]}))
    method = omega_method(scripted.origin + "/s", params={"q": "{query}"}, concurrency=1)
    search_run(http_spec(method, 10), questions.head(1), 10, tmp_path / "cache", "svc")
    (entry,) = (tmp_path / "cache").glob("*.json")  # as an older rankbench cached a NaN answer
    entry.write_text(entry.read_text().replace("2.0", "NaN"))
    run, _, cached = search_run(http_spec(method, 10), questions.head(1), 10, tmp_path / "cache", "svc")
    assert list(run["score"]) == [2.0] and cached == [] and len(scripted.seen) == 2
    assert "NaN" not in entry.read_text()


def test_hits_sets_the_number_asked_for_in_place_of_the_evaluation_depth(scripted: ScriptedServer,
                                                                         questions: pd.DataFrame,
                                                                         tmp_path: Path) -> None:
    scripted.answer((200, {}, {"hits": {"hits": [{"_id": "returns-2025", "_score": 2.0}]}}))
    method = {"type": "http", "url": scripted.origin + "/idx/_search", "preset": "opensearch", "hits": 3,
              "concurrency": 1}
    check_http_method(method, {}, "methods.svc", "config.yaml")
    search_run(http_spec(method, 10), questions.head(1), 10, tmp_path / "cache", "svc")
    assert json.loads(scripted.seen[0]["body"])["size"] == 3


def test_the_presets_build_their_engines_requests_and_read_their_answers() -> None:
    values = {"query": "bike returns", "hits": 5, "qid": "q1"}
    opensearch = http_spec({"url": "http://localhost:9200/docs/_search", "preset": "opensearch"}, 100)
    assert opensearch.http_method == "POST" and opensearch.hits == 100
    assert fill(opensearch.body, values) == {"query": {"match": {"text": "bike returns"}}, "size": 5,
                                             "_source": False}
    # the answer shape of Elasticsearch's and OpenSearch's search API reference
    answer = {"took": 3, "hits": {"total": {"value": 2}, "max_score": 1.3,
                                  "hits": [{"_index": "docs", "_id": "d1", "_score": 1.3},
                                           {"_index": "docs", "_id": "d2", "_score": 0.2}]}}
    assert select(answer, opensearch.ids) == ["d1", "d2"] and select(answer, opensearch.scores) == [1.3, 0.2]
    solr = http_spec({"url": "http://localhost:8983/solr/docs/select", "preset": "solr"}, 10)
    assert solr.http_method == "GET" and fill(dict(solr.params), values)["rows"] == 5
    answer = {"responseHeader": {"status": 0}, "response": {"numFound": 1, "docs": [{"id": "d3", "score": 4.5}]}}
    assert select(answer, solr.ids) == ["d3"] and select(answer, solr.scores) == [4.5]
    assert http_settings({"preset": "solr"})["ids"] == "response.docs[*].id"
    assert PRESETS["elasticsearch"] == PRESETS["opensearch"]


@pytest.mark.parametrize("settings, where, message", [
    ({"url": "http://user:pw@localhost/s"}, "url", "holds a user name or password"),
    ({"params": {"q": "{question}"}}, "params", r"names \{question\}, which no question has"),
    ({"headers": {"Authorization": "RANKBENCH_UNSET_VARIABLE"}}, "headers.Authorization", "is not set"),
    ({"hits": 0}, "hits", "not a number of hits"),
    ({"params": {"rows": "{k}"}}, "params", r"names \{k\}, which is now \{hits\} \(the number of hits asked for\)\. "
                                            r"Rename it to \{hits\}\."),
    ({"body": {"size": "{k}"}}, "body", r"names \{k\}, which is now \{hits\}"),
    ({"ids": "hits[*].id[*]"}, "ids", "needs exactly one"),
    ({"id_pattern": "(?P<doc>.*)"}, "id_pattern", "has no group named `id`"),
])
def test_a_bad_method_is_refused_at_start(settings: dict, where: str, message: str) -> None:
    method = {"url": "http://localhost:9/s", "ids": "hits[*].id", "scores": "hits[*].score", **settings}
    with pytest.raises(InputError, match=rf"^config\.yaml, methods\.svc\.{where}: .*{message}"):
        check_http_method(method, {}, "methods.svc", "config.yaml")


def test_a_method_with_neither_preset_nor_selectors_is_refused() -> None:
    with pytest.raises(InputError, match=r"methods\.svc: sets no `ids` and no preset\. Give `preset: "):
        check_http_method({"url": "http://localhost/s"}, {}, "methods.svc", "config.yaml")


def test_the_path_selector_reads_lists_keys_and_positions() -> None:
    answer = {"a": [{"b": {"c": [7, 8]}}, {"b": {"c": [9]}}]}
    assert select(answer, "a[*].b.c[0]") == [7, 9]
    assert select([{"id": 1}], "[*].id") == [1]
    assert parse_path("x.y[2][*]._id") == ["x", "y", 2, "*", "_id"]
    for bad in ("a..b", "a[*].[*]", "a[x]", "a.b"):
        with pytest.raises(PathError):
            parse_path(bad)
    with pytest.raises(PathError, match="has no 'c'"):
        select({"a": [{"b": {}}]}, "a[*].b.c")
    with pytest.raises(PathError, match="not a list"):
        select({"a": {"b": 1}}, "a[*].b")


def test_an_answer_echoing_the_key_in_any_form_is_masked_before_it_is_cached(
        scripted: ScriptedServer, questions: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a 200 answer that echoed the header's key (plainly or as JSON writes it) was cached as it came."""
    key = "st/0a1b2c3d+4e5f6789"
    monkeypatch.setenv(TOKEN_VARIABLE, key)
    scripted.answer((200, {"Server": f"search/2.1 ({key})"},
                     b'{"debug": {"auth": "' + key.replace("/", "\\/").encode() + b'", "plain": "' + key.encode()
                     + b'"}, "hits": [{"id": "returns-2025", "score": 2.0}]}'))
    method = {**omega_method(scripted.origin + "/s", params={"q": "{query}"}, concurrency=1),
              "version_header": "Server", "headers": {"X-Api-Key": TOKEN_VARIABLE}}
    run, record, _ = search_run(http_spec(method, 10), questions.head(1), 10, tmp_path / "cache", "svc")
    assert list(run["doc_id"]) == ["returns-2025"]
    stored = "".join(path.read_text() for path in (tmp_path / "cache").iterdir()) + json.dumps(record)
    assert "0a1b2c3d" not in stored and '"auth": "***"' in stored and "search/2.1 (***)" in stored
