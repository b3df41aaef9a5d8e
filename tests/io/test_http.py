"""The API client (rankbench.io.http, on httpx) against real local servers: redirects never carry the key elsewhere,
a trickling server is given up on within the timeout, busy answers and dropped connections are retried (client errors
and refused connections are not), a Retry-After that is no number of seconds is ignored, and secrets are redacted
from errors and logs."""

from __future__ import annotations

import base64
import html
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.parse
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from http_servers import ScriptedServer, elsewhere, scripted, tls_scripted

from rankbench.configuration.config import check_endpoints, check_finite
from rankbench.errors import InputError
from rankbench.execution.scripting import run_script
from rankbench.io.http import api_key, check_base_url, post_json, retry_after
from rankbench.llm.chat import chat_from_spec
from rankbench.redaction import redact, register_secret
from rankbench.retrieval.encoders.api import ApiEncoder, ApiEncoderSpec

__all__ = ["elsewhere", "scripted", "tls_scripted"]  # fixtures
KEY_VARIABLE = "RANKBENCH_TEST_KEY"
KEY = "tk-9f8e7d6c5b4a3210"  # no known key shape: only its registration redacts it
EMBEDDINGS = {"data": [{"index": 0, "embedding": [0.6, 0.8]}]}
CHAT = {"choices": [{"message": {"role": "assistant", "content": "yes"}}]}


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, KEY)


def embed(base_url: str, tmp_path: Path, timeout: float = 5.0) -> None:
    spec = ApiEncoderSpec(base_url=base_url, model="m", api_key_env=KEY_VARIABLE, timeout=timeout, retries=1,
                          backoff=0.01)
    ApiEncoder(spec, tmp_path / "api", "encoders.api").encode_queries(["a question"])


def chat(base_url: str, tmp_path: Path, timeout: float = 5.0) -> None:
    chat_from_spec({"backend": "openai", "base_url": base_url, "model": "m", "api_key_env": KEY_VARIABLE,
                    "timeout": timeout, "retries": 1, "backoff": 0.01, "cache": str(tmp_path / "chat")}
                   ).text([{"role": "user", "content": "hello"}], 5)


CLIENTS = {"embeddings": (embed, "/v1/embeddings", EMBEDDINGS), "chat": (chat, "/v1/chat/completions", CHAT)}


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_never_takes_the_key_to_another_origin(scripted: ScriptedServer, elsewhere: ScriptedServer,
                                                          tmp_path: Path, client: str, status: int) -> None:
    call, path, answer = CLIENTS[client]
    scripted.answer((status, {"Location": elsewhere.origin + path}, b""))
    elsewhere.answer((200, {}, answer))
    with pytest.raises(InputError, match=rf"answered HTTP {status}, a redirect to {elsewhere.origin}\. API requests "
                                         r"never follow redirects"):
        call(scripted.origin + "/v1", tmp_path)
    assert elsewhere.seen == []
    assert [request["headers"]["Authorization"] for request in scripted.seen] == [f"Bearer {KEY}"]


@pytest.mark.parametrize("client, headers_too", [("embeddings", False), ("chat", True)])
def test_a_server_that_trickles_its_answer_is_given_up_on_within_the_timeout(
        scripted: ScriptedServer, tmp_path: Path, client: str, headers_too: bool) -> None:
    call, _path, answer = CLIENTS[client]
    scripted.answer((200, {}, answer))
    scripted.trickle, scripted.trickle_headers = 0.1, headers_too  # a byte well within each read's timeout
    started = time.monotonic()
    with pytest.raises(InputError, match=r"did not answer within 0\.5 s \(2 attempts\)\. Raise encoders\.api\.timeout "
                                         r"\(the seconds one request may take in all\)" if client == "embeddings"
                       else r"did not answer within 0\.5 s \(2 attempts\)\. Raise llm\.timeout"):
        call(scripted.origin + "/v1", tmp_path, timeout=0.5)
    assert time.monotonic() - started < 3  # 2 × 0.5 s and the backoff; before: 10 s a request, then a retry
    assert len(scripted.seen) == 2


def test_a_trickling_server_over_tls_is_given_up_on_too(tls_scripted: ScriptedServer, tmp_path: Path) -> None:
    tls_scripted.answer((200, {}, EMBEDDINGS))
    embed(tls_scripted.origin + "/v1", tmp_path)  # the certificate is trusted: a plain answer arrives
    tls_scripted.trickle = 0.1
    started = time.monotonic()
    with pytest.raises(InputError, match=r"did not answer within 0\.5 s \(2 attempts\)"):
        embed(tls_scripted.origin + "/v1", tmp_path / "other", timeout=0.5)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("header", ["nan", "-5", "inf", "1e400", "Wed, 21 Oct 2015 07:28:00 GMT", ""])
def test_a_retry_after_that_is_no_number_of_seconds_waits_the_backoff(scripted: ScriptedServer,
                                                                      header: str) -> None:
    scripted.answer((429, {"Retry-After": header}, b"{}"), (200, {}, CHAT))
    started = time.monotonic()
    raw = post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 1, 0.05, "llm")
    assert json.loads(raw) == CHAT and len(scripted.seen) == 2
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_a_busy_answer_is_retried_until_the_attempts_run_out(scripted: ScriptedServer, status: int) -> None:
    scripted.answer((status, {}, b"busy"), (200, {}, CHAT))
    assert json.loads(post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 1, 0.01, "llm")) == CHAT
    scripted.answer((status, {}, b"still busy"))
    with pytest.raises(InputError, match=rf"answered HTTP {status} after 3 attempts \(still busy\)\. Check llm\.model"):
        post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 2, 0.01, "llm")
    assert len(scripted.seen) == 2 + 3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_client_error_is_not_retried(scripted: ScriptedServer, status: int) -> None:
    scripted.answer((status, {}, b""), (200, {}, CHAT))
    with pytest.raises(InputError, match=rf"answered HTTP {status} \(\w"):  # no body: the status's reason phrase
        post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 3, 0.01, "llm")
    assert len(scripted.seen) == 1


def test_a_dropped_connection_is_retried_and_named_when_every_attempt_drops(scripted: ScriptedServer) -> None:
    scripted.answer((200, {}, CHAT))
    scripted.drop = 1
    assert json.loads(post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 1, 0.01, "llm")) == CHAT
    scripted.drop = 3
    with pytest.raises(InputError, match=r"dropped the connection on each of 3 attempts \(RemoteProtocolError: "):
        post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 2, 0.01, "llm")
    assert len(scripted.seen) == 2 + 3


def test_a_refused_connection_fails_at_once_without_retries(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(InputError, match=rf"^http://127\.0\.0\.1:{port}/v1/chat/completions: is unreachable \(.*\)\. "
                                         r"Start the server, or fix llm\.base_url in the config\.$"):
        post_json(f"http://127.0.0.1:{port}/v1/chat/completions", {}, None, 5.0, 3, 1.0, "llm")
    assert time.monotonic() - started < 1  # three retries would wait 1 + 2 + 4 s


def test_a_request_does_not_load_the_certificates_again(scripted: ScriptedServer) -> None:
    """A search service is asked once per question: each request built a TLS context (~0.1 s of certificates)."""
    scripted.answer((200, {}, CHAT))
    post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 0, 0.01, "llm")
    started = time.monotonic()
    for _ in range(20):
        post_json(scripted.origin + "/v1/chat/completions", {}, None, 5.0, 0, 0.01, "llm")
    assert time.monotonic() - started < 0.5  # 1.6 s before (20 TLS contexts), 0.03 s now


def test_retry_after_is_capped_and_defaults_to_the_backoff() -> None:
    assert retry_after("2.5", 1.0) == 2.5 and retry_after("1e9", 1.0) == 60.0 and retry_after("-3", 1.0) == 0.0
    assert [retry_after(value, 1.5) for value in ("nan", "inf", "-inf", "soon", None)] == [1.5] * 5


def test_a_body_that_echoes_the_key_is_redacted_in_the_error_and_the_log(scripted: ScriptedServer, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    scripted.answer((401, {}, {"error": {"message": f"Incorrect API key provided: {KEY} (Bearer {KEY})"}}))
    log = tmp_path / "api.log"
    with pytest.raises(SystemExit):
        run_script(lambda _: embed(scripted.origin + "/v1", tmp_path), SimpleNamespace(log=[str(log)], threads=1))
    written = log.read_text()
    assert "answered HTTP 401 (" in written and "Incorrect API key provided: ***" in written
    assert KEY not in written and KEY not in capsys.readouterr().err


def test_a_bug_whose_message_holds_the_key_leaves_a_redacted_traceback(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def failing(_: object) -> None:
        api_key(KEY_VARIABLE, "encoders.api")  # read through rankbench: registered for redaction
        raise RuntimeError(f"unexpected answer for Bearer {KEY}")

    log = tmp_path / "job.log"
    with pytest.raises(SystemExit):
        run_script(failing, SimpleNamespace(log=[str(log)], threads=1))
    for written in (log.read_text(), capsys.readouterr().err):
        assert "Traceback" in written and "RuntimeError: unexpected answer for Bearer ***" in written
        assert KEY not in written


@pytest.mark.parametrize("client", CLIENTS)
def test_credentials_in_a_base_url_are_refused_and_never_shown(tmp_path: Path, client: str) -> None:
    url = "http://someone:hunter2-secret@127.0.0.1:9/v1"
    with pytest.raises(InputError, match=r"base_url: holds a user name or password \(http://\*\*\*@127\.0\.0\.1:9/v1"
                                         r"\)\. Remove them") as error:
        CLIENTS[client][0](url, tmp_path)
    assert "hunter2" not in str(error.value) and "someone" not in str(error.value)


@pytest.mark.parametrize("value, shown", [
    ("sk-proj-a1b2c3d4e5f6g7h8", False),  # a key with dashes: no variable name
    ("AbC123xyz789Qwerty000ZZ", False),  # a key that is a valid name, not set: not repeated
    ("MY_EMBEDDING_KEY", True),  # a name, not set: named, so the user can see which
])
def test_a_key_given_as_api_key_env_is_never_repeated(value: str, shown: bool) -> None:
    config = {"encoders": {"api": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
                                   "api_key_env": value}}, "methods": {}}
    with pytest.raises(InputError, match=r"^my\.yaml, encoders\.api\.api_key_env: ") as error:
        check_endpoints(config, "my.yaml")
    assert (value in str(error.value)) == shown
    if not shown:  # and it is masked from then on, wherever it would appear
        assert redact(f"key {value}") == "key ***"


def test_an_api_key_read_is_redacted_from_then_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_CREDENTIALS_X", "plain-value-1234")
    assert api_key(KEY_VARIABLE, "llm") == KEY
    assert redact(f"a {KEY} b") == "a *** b"
    assert redact("x plain-value-1234 y") == "x *** y"  # a secret-named variable's value, registered or not
    register_secret("abc")  # too short to be masked without mangling words
    assert redact("abc") == "abc"


@pytest.mark.parametrize("text, redacted", [
    ("http://user:pa55@host:8/v1 and https://tok@h/x", "http://***@host:8/v1 and https://***@h/x"),
    ("Authorization: Bearer abcdefgh12345", "Authorization: Bearer ***"),
    ("GET /v1?api_key=abcdef&x=1 ?token=zz", "GET /v1?api_key=***&x=1 ?token=***"),
    ("key sk-abcdefghijklmnop and hf_abcdefghijklmnopqrstuvwxyz0", "key *** and ***"),
    ("huggingface_hub.hf_hub_download failed; sk-learn", "huggingface_hub.hf_hub_download failed; sk-learn"),
    ("a token count of 12, the basic model", "a token count of 12, the basic model"),
])
def test_redact_masks_userinfo_tokens_and_key_shapes(text: str, redacted: str) -> None:
    assert redact(text) == redacted


def test_an_input_error_is_redacted_in_each_part() -> None:
    error = InputError("http://u:p4ss@h/v1", "Bearer abcdefgh1234", f"said {KEY}", "fix http://u:p4ss@h")
    assert str(error) == "http://***@h/v1, Bearer ***: said ***. fix http://***@h"
    assert (error.path, error.where, error.problem) == ("http://***@h/v1", "Bearer ***", "said ***")


def test_check_base_url_accepts_a_plain_url() -> None:
    check_base_url("https://api.example.com:443/v1?x=1", "llm")


def test_a_timeout_that_is_no_number_is_refused_at_start() -> None:
    config = {"encoders": {}, "methods": {}, "llm": {"chat": {"backend": "openai", "base_url": "http://h/v1",
                                                              "model": "m", "timeout": float("nan")}}}
    with pytest.raises(InputError, match=r"^my\.yaml, llm\.chat\.timeout: is nan, not a finite number"):
        check_finite(config, "my.yaml")


def test_the_config_recorded_on_pages_and_in_the_history_is_redacted() -> None:
    from rankbench.records.provenance import canonical_config

    recorded = canonical_config({"llm": {"chat": {"base_url": "http://me:pa55word@h/v1", "note": f"key {KEY}"}}})
    assert "pa55word" not in recorded and KEY not in recorded and "http://***@h/v1" in recorded


SLASHED_KEY = "tk/9f8e+7d6c:5b4a=3210&x y"  # every character an encoder rewrites
ENCODED_ECHOES = {
    "JSON with \\/": SLASHED_KEY.replace("/", "\\/"),
    "JSON \\u escapes": "".join(f"\\u{ord(c):04X}" if not c.isalnum() else c for c in SLASHED_KEY),
    "percent-encoded": urllib.parse.quote(SLASHED_KEY, safe=""),
    "percent-encoded, lower-case hex": urllib.parse.quote(SLASHED_KEY, safe="").replace("%2F", "%2f"),
    "form-encoded": urllib.parse.quote_plus(SLASHED_KEY),
    "HTML entities": html.escape(SLASHED_KEY).replace("/", "&#x2F;").replace(":", "&#58;"),
    "base64": base64.b64encode(SLASHED_KEY.encode()).decode(),
    "base64, URL-safe, unpadded": base64.urlsafe_b64encode(SLASHED_KEY.encode()).decode().rstrip("="),
}


@pytest.mark.parametrize("form", ENCODED_ECHOES)
def test_a_401_body_echoing_the_key_in_any_encoding_is_masked_in_the_error_and_the_log(
        scripted: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        form: str) -> None:
    monkeypatch.setenv(KEY_VARIABLE, SLASHED_KEY)
    echo = ENCODED_ECHOES[form]
    # the echo starts at byte 290: the 300-byte excerpt would cut it in two, and the mask must still hold
    scripted.answer((401, {}, ('{"pad": "' + "x" * 260 + '", "error": "bad key ' + echo + '"}').encode()))
    log = tmp_path / "api.log"
    with pytest.raises(SystemExit):
        run_script(lambda _: embed(scripted.origin + "/v1", tmp_path), SimpleNamespace(log=[str(log)], threads=1))
    written = log.read_text() + capsys.readouterr().err
    assert "answered HTTP 401 (" in written
    assert echo[:8] not in written and SLASHED_KEY not in written


def test_a_basic_credential_is_masked_as_sent_as_user_password_and_as_password(
        scripted: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rankbench.retrieval.http_search import http_spec, search_run

    password = "s3cr3t/pass+word"
    monkeypatch.setenv("SEARCH_AUTH", "Basic " + base64.b64encode(f"alice:{password}".encode()).decode())
    echoes = [f"alice:{password}", urllib.parse.quote(password, safe=""), password.replace("/", "\\/")]
    scripted.answer((401, {}, {"error": "; ".join(echoes)}))
    method = {"url": scripted.origin + "/_search", "preset": "opensearch", "headers": {"Authorization": "SEARCH_AUTH"},
              "retries": 0}
    questions = pd.DataFrame({"qid": ["q1"], "question": ["refunds"]})
    with pytest.raises(InputError, match="answered HTTP 401") as error:
        search_run(http_spec(method, 5), questions, 5, tmp_path / "cache", "svc")
    assert password[:6] not in str(error.value) and "alice:***" not in str(error.value)
    assert scripted.seen[0]["headers"]["Authorization"] == os.environ["SEARCH_AUTH"]  # sent as given


def test_a_worker_threads_unexpected_traceback_is_redacted_on_stderr(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import threading, urllib.parse
        from types import SimpleNamespace
        from rankbench.execution.scripting import run_script
        from rankbench.io.http import api_key

        def main(_):
            key = api_key({KEY_VARIABLE!r}, "encoders.api")
            def work():
                raise RuntimeError("the service said " + urllib.parse.quote(key + "/x", safe=""))
            thread = threading.Thread(target=work)
            thread.start()
            thread.join()

        run_script(main, SimpleNamespace(log=[{str(tmp_path / 'job.log')!r}], threads=1))
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, KEY_VARIABLE: SLASHED_KEY, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "RuntimeError: the service said ***" in done.stderr
    assert urllib.parse.quote(SLASHED_KEY, safe="")[:8] not in done.stderr


def test_redacting_a_large_text_stays_cheap_with_secrets_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, SLASHED_KEY)
    register_secret(SLASHED_KEY)
    text = ("a config line without any secret in it; " * 25_000) + SLASHED_KEY
    assert redact(text).endswith(" ***") and len(redact(text)) == len(text) - len(SLASHED_KEY) + 3
