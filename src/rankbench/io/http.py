"""Requests to an HTTP API (on httpx) with timeouts and retries: the one client of the endpoints rankbench talks to
(OpenAI-compatible chat completions and embeddings, search services, an MLflow tracking server). Redirects are never
followed (the API key would go to whatever host a server names), and each attempt has a total deadline, not only
httpx's limit per socket read."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rankbench.errors import InputError
from rankbench.redaction import excerpt, redact, register_secret

if TYPE_CHECKING:
    import httpx

RETRY_STATUS = {408, 429, 500, 502, 503, 504}
MAX_RETRY_AFTER = 60.0  # seconds: a longer (or unreadable) Retry-After is capped (or replaced by the backoff delay)
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A variable name an error may repeat: upper case, short words. Anything else might be a key pasted by mistake.
SHOWN_NAME = re.compile(r"[A-Z][A-Z0-9]{0,15}(_[A-Z0-9]{1,16})*")


def check_base_url(base_url: str, setting: str, source: str | None = "config", url_key: str = "base_url",
                   secret_fix: str = "give the key through {setting}.api_key_env (the name of an environment "
                                     "variable holding it, sent as a Bearer token)") -> None:
    """An endpoint's URL holds no user name or password: credentials never go in a config (pages and records show
    it), only the name of the variable that holds the key (`secret_fix` says where it goes)."""
    if urlsplit(base_url).netloc.count("@"):
        raise InputError(source, f"{setting}.{url_key}", f"holds a user name or password ({base_url})",
                         f"Remove them from the URL, and {secret_fix.format(setting=setting)}.")


def api_key(variable: str, setting: str, source: str | None = "config", setting_key: str = "api_key_env"
            ) -> str:
    """The API key (or a header's value) in the environment variable a config names (at `setting_key`), registered
    for redaction. A value that is no variable name (a key given by mistake) is never repeated: it is redacted too."""
    shown = repr(variable) if SHOWN_NAME.fullmatch(variable) else "a variable (its name is not shown: it may be a key)"
    if not VARIABLE_NAME.fullmatch(variable):
        register_secret(variable)
        raise InputError(source, f"{setting}.{setting_key}", "is not the name of an environment variable (not shown: "
                         "it may be the key itself)", "Put the key in an environment variable and give that "
                         f"variable's name, e.g. `{setting_key}: OPENAI_API_KEY`; never the key.")
    key = os.environ.get(variable)
    if not key:
        if not SHOWN_NAME.fullmatch(variable):
            register_secret(variable)
        raise InputError(source, f"{setting}.{setting_key}", f"names {shown}, which is not set in the environment",
                         f"Export {variable if SHOWN_NAME.fullmatch(variable) else 'it'}=<your key> before running "
                         f"({setting_key} takes the variable's name, never the key).")
    register_secret(key)
    return key


def post_json(url: str, body: Mapping[str, Any], api_key: str | None, timeout: float, retries: int, backoff: float,
              setting: str) -> bytes:
    """The raw response to a JSON POST with the key as a Bearer token (see `send`)."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    payload, _ = send(url, json.dumps(body).encode("utf-8"), headers, "POST", timeout, retries, backoff, setting,
                      f"Check {setting}.model, the API key and the server's log.")
    return payload


def send(url: str, data: bytes | None, headers: Mapping[str, str], method: str, timeout: float, retries: int,
         backoff: float, setting: str, status_fix: str, url_key: str = "base_url") -> tuple[bytes, Mapping[str, str]]:
    """The raw body and headers of the answer to one request; HTTP 408/429/5xx, timeouts and dropped connections are
    retried with exponential backoff (Retry-After honoured); a refused connection or an unknown host is not (nothing
    listens there: only a fix of the config, or starting the server, changes that). Each attempt must complete within
    `timeout` seconds in all (connecting, sending, waiting and reading), so a server that trickles its answer is given
    up on too. A redirect is an error, never followed. Failures are InputErrors naming the URL, the HTTP status and an
    excerpt of the body (secrets redacted); `setting` is the config key of the endpoint's settings and `url_key` the
    key of its address, named in the fix, and `status_fix` the fix of an error status."""
    import httpx  # the workflow extra's: only jobs that make requests load it

    # Worth another attempt: the server was busy or dropped the connection (a timeout is one too).
    transient = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
    for attempt in range(retries + 1):
        last = attempt == retries
        try:
            status, payload, answer = _attempt(httpx.Request(method, url, content=data, headers=dict(headers)),
                                               timeout)
        except (httpx.TransportError, httpx.InvalidURL) as error:
            if isinstance(error, httpx.TimeoutException):
                if last:
                    raise InputError(url, None, f"did not answer within {timeout:g} s ({retries + 1} attempts)",
                                     f"Raise {setting}.timeout (the seconds one request may take in all), or "
                                     "check that the server is not overloaded.") from None
            elif not isinstance(error, transient):
                raise InputError(url, None, f"is unreachable ({error})",
                                 f"Start the server, or fix {setting}.{url_key} in the config.") from None
            elif last:
                raise InputError(url, None, f"dropped the connection on each of {retries + 1} attempts "
                                 f"({type(error).__name__}: {error})", "Check the server's log.") from None
            wait = backoff * 2 ** attempt
        else:
            if status < 300:
                return payload, answer
            if status < 400:
                target = urlsplit(answer.get("Location") or "")
                where = f"{target.scheme}://{target.netloc}" if target.netloc else "another address"
                raise InputError(url, None, f"answered HTTP {status}, a redirect to {where}",
                                 "API requests never follow redirects (the API key would go to another host): "
                                 f"set {setting}.{url_key} to the address the server names, if you trust it.")
            if status not in RETRY_STATUS or last:
                detail = excerpt(payload, 300).strip() or httpx.codes.get_reason_phrase(status)
                tried = f" after {attempt + 1} attempts" if attempt else ""
                raise InputError(url, None, f"answered HTTP {status}{tried} ({detail})", status_fix)
            wait = retry_after(answer.get("Retry-After"), backoff * 2 ** attempt)
        logging.warning("request to %s failed (attempt %d), retrying in %.1f s", redact(url), attempt + 1, wait)
        time.sleep(wait)
    raise AssertionError("unreachable")


def _attempt(request: httpx.Request, timeout: float) -> tuple[int, bytes, httpx.Headers]:
    """Status, body and headers of one request (an error status too), read in full within `timeout` seconds; an
    httpx.TimeoutException when the deadline passed, httpx's other errors when the connection failed. A client of
    its own: its connection is new, so the deadline watches it (a pooled one would escape), and a redirect comes
    back as the answer (follow_redirects=False, httpx's default, said here because the key must never follow one).
    Proxies and CA files come from the environment (HTTPS_PROXY, NO_PROXY, SSL_CERT_FILE), as httpx reads them."""
    import httpx

    deadline = Deadline(timeout)

    def watch_connections(event: str, info: Mapping[str, Any]) -> None:
        """httpcore's trace hook: each new socket, and again under TLS (wrapping it detaches the plain one)."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            deadline.watch(info["return_value"].get_extra_info("socket"))

    request.extensions["trace"] = watch_connections
    with deadline:
        try:
            with httpx.Client(timeout=timeout, follow_redirects=False,
                              verify=_tls(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))) as client:
                response = client.send(request)
        except httpx.TransportError:
            if deadline.expired:
                raise httpx.TimeoutException("the request's deadline passed", request=request) from None
            raise
    if deadline.expired:  # a body without Content-Length ends early, without an error, when its socket shuts down
        raise httpx.TimeoutException("the request's deadline passed", request=request)
    return response.status_code, response.content, response.headers


@functools.lru_cache(maxsize=4)
def _tls(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    """httpx's TLS context for the CA file or folder the environment names (SSL_CERT_FILE, SSL_CERT_DIR; else
    certifi's), made once per pair (the arguments are the cache's key; httpx reads the variables itself): loading
    the certificates takes ~0.1 s, a request to a local server a few ms."""
    import httpx

    return httpx.create_ssl_context(trust_env=True)


def retry_after(header: str | None, default: float) -> float:
    """Seconds a 429/503 asks us to wait (0 to 60 s), else the backoff delay: also for a Retry-After that is not a
    finite number of seconds (nan, inf, an HTTP date)."""
    try:
        seconds = float(header) if header else math.nan
    except ValueError:
        seconds = math.nan
    return min(max(seconds, 0.0), MAX_RETRY_AFTER) if math.isfinite(seconds) else default


class Deadline:
    """The end of one request: when it passes, the request's sockets are shut down, so a read blocked on a server
    that sends a byte now and then returns at once (httpx's timeouts bound each read, not the request)."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self._timer.cancel()
            self._sockets.clear()

    def watch(self, sock: socket.socket) -> None:
        """Shut this socket down when the deadline passes (at once if it has)."""
        with self._lock:
            self._sockets.append(sock)
        if self.expired:
            self._expire()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                with contextlib.suppress(OSError):  # already closed
                    # the plain socket's shutdown, also under TLS: it ends the read blocked in the other thread
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
