"""Real HTTP servers on 127.0.0.1 for the client's hostile cases: one that answers scripted responses (a redirect,
a Retry-After, a body echoing the key) and records the headers it got; one that trickles its answer a byte at a
time; one that accepts connections and never answers."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

Step = tuple[int, dict[str, str], bytes]


class ScriptedServer(ThreadingHTTPServer):
    """Answers each request (any method, any path) with the next scripted (status, headers, body), then with the
    last one again; records the method, path, headers and body of each request. `trickle` > 0 sends the answer one byte
    each `trickle` seconds (status line and headers too when `trickle_headers`), for at most `trickle_for` s; the first
    `drop` requests are read and their connection closed with no answer."""

    def __init__(self, certificate: Path | None = None) -> None:
        super().__init__(("127.0.0.1", 0), ScriptedHandler)
        self.daemon_threads = True
        self.scheme = "https" if certificate else "http"
        if certificate:  # TLS: the certificate file holds the key too
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certificate)
            self.socket = context.wrap_socket(self.socket, server_side=True)
        self.script: list[Step] = [(200, {}, b"{}")]
        self.seen: list[dict] = []
        self.trickle, self.trickle_headers, self.trickle_for = 0.0, False, 10.0
        self.drop = 0

    def answer(self, *steps: tuple[int, dict[str, str], object]) -> None:
        self.script = [(status, headers, body if isinstance(body, bytes) else json.dumps(body).encode())
                       for status, headers, body in steps]

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{'localhost' if self.scheme == 'https' else '127.0.0.1'}:{self.server_address[1]}"


class ScriptedHandler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.server.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                 "body": body})
        if self.server.drop:
            self.server.drop -= 1
            self.close_connection = True
            return
        status, headers, body = self.server.script.pop(0) if len(self.server.script) > 1 else self.server.script[0]
        kind = "" if "Content-Type" in headers else "Content-Type: application/json\r\n"  # scripted one wins
        head = f"HTTP/1.1 {status} X\r\n{kind}Content-Length: {len(body)}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
        if not self.server.trickle:
            self.wfile.write(head.encode() + body)
            return
        if not self.server.trickle_headers:
            self.wfile.write(head.encode())
            self.wfile.flush()
        payload = (head.encode() if self.server.trickle_headers else b"") + body
        stop = time.monotonic() + self.server.trickle_for
        try:
            for byte in payload:
                if time.monotonic() > stop:
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(self.server.trickle)
        except OSError:
            pass  # the client gave up
        self.close_connection = True

    do_GET = do_POST = do_PUT = _answer  # noqa: N815 (http.server's naming)

    def log_message(self, *args: object) -> None:
        pass


def _serve(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    yield from _serve(ScriptedServer())  # type: ignore[misc]


@pytest.fixture
def elsewhere() -> Iterator[ScriptedServer]:
    """A second scripted server, on another port: another origin."""
    yield from _serve(ScriptedServer())  # type: ignore[misc]


@pytest.fixture
def tls_scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    """A scripted server over TLS (https://localhost), with a self-signed certificate the clients trust."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    certificate = tmp_path / "localhost.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(certificate.with_suffix(".key")),
                    "-out", str(certificate.with_suffix(".crt"))], check=True, capture_output=True)
    certificate.write_bytes(certificate.with_suffix(".crt").read_bytes() + certificate.with_suffix(".key").read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.with_suffix(".crt")))
    yield from _serve(ScriptedServer(certificate))  # type: ignore[misc]


@pytest.fixture
def silent() -> Iterator[str]:
    """The origin of a socket that accepts connections and never answers (nor closes them)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    done.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


class TimedSearchServer(ThreadingHTTPServer):
    """A small search service that logs how long it took over each request, as an access log's %D does: GET
    /search?q=…&k=… ranks its documents by the query terms they share and answers {"hits": [{"id", "score"}]}
    after working `delay(query)` seconds; `log` holds (query, seconds from the request read to the answer sent)."""

    def __init__(self, documents: dict[str, str], delay: object) -> None:
        super().__init__(("127.0.0.1", 0), TimedSearchHandler)
        self.daemon_threads = True
        self.documents = {doc_id: set(text.lower().split()) for doc_id, text in documents.items()}
        self.delay = delay
        self.log: list[tuple[str, float]] = []

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class TimedSearchHandler(BaseHTTPRequestHandler):
    server: TimedSearchServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        from urllib.parse import parse_qs, urlsplit

        started = time.perf_counter()
        fields = parse_qs(urlsplit(self.path).query)
        query, k = fields.get("q", [""])[0], int(fields.get("k", ["10"])[0])
        terms = set(query.lower().split())
        scored = sorted(((len(terms & words), doc_id) for doc_id, words in self.server.documents.items()
                         if terms & words), key=lambda pair: (-pair[0], pair[1]))[:k]
        time.sleep(self.server.delay(query))  # type: ignore[operator]
        body = json.dumps({"hits": [{"id": doc_id, "score": float(score)} for score, doc_id in scored]}).encode()
        self.wfile.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                         .encode() + body)
        self.wfile.flush()
        self.server.log.append((query, time.perf_counter() - started))

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def timed_search() -> Iterator[type[TimedSearchServer]]:
    """The TimedSearchServer class, each server made from it served on 127.0.0.1 until the test ends."""
    servers: list[TimedSearchServer] = []

    class Served(TimedSearchServer):
        def __init__(self, documents: dict[str, str], delay: object) -> None:
            super().__init__(documents, delay)
            servers.append(self)
            threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True).start()

    yield Served
    for server in servers:
        server.shutdown()
        server.server_close()
