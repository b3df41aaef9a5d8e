"""A real HTTP server on 127.0.0.1 (ephemeral port) speaking the OpenAI chat-completions protocol, for tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def completion(text: str, top: list[tuple[str, float]] | None = None) -> dict:
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if top is not None:
        choice["logprobs"] = {"content": [{"token": top[0][0], "logprob": top[0][1],
                                           "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}]}
    return {"object": "chat.completion", "model": "test-model", "choices": [choice]}


class ChatServer(ThreadingHTTPServer):
    """Answers POST /v1/chat/completions from a script of (status, body, delay) steps, recording each request."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.daemon_threads = True
        self.script: list[tuple[int, bytes, float]] = []
        self.responder: Callable[[dict], dict] | None = None
        self.requests: list[dict] = []
        self.headers_seen: list[dict] = []

    def answer(self, *steps: tuple[int, object, float]) -> None:
        self.script = [(status, body if isinstance(body, bytes) else json.dumps(body).encode(), delay)
                       for status, body, delay in steps]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        assert self.path == "/v1/chat/completions"
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        self.server.headers_seen.append(dict(self.headers))
        if self.server.script:
            status, payload, delay = self.server.script.pop(0)
        elif self.server.responder is not None:
            status, payload, delay = 200, json.dumps(self.server.responder(body)).encode(), 0.0
        else:
            status, payload, delay = 200, b"{}", 0.0
        time.sleep(delay)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    httpd = ChatServer()
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


