"""One chat interface over an OpenAI-compatible endpoint or a local GGUF model, with a disk cache of requests.

Every request is deterministic (temperature 0, a fixed seed) and cached on disk under a key made of the model,
the messages and the parameters, so a rerun of any LLM step costs nothing and needs no model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from rankbench.errors import InputError
from rankbench.io.files import write_text
from rankbench.io.http import api_key, check_base_url, post_json
from rankbench.llm.model_file import INSTALL_HINT, default_cache_dir, packaged_model
from rankbench.redaction import excerpt, redact

Messages = Sequence[Mapping[str, str]]
BACKEND_DEFAULTS: dict[str, Any] = {
    "backend": "local", "base_url": None, "model": None, "api_key_env": None, "timeout": 60.0, "retries": 3,
    "backoff": 1.0, "model_path": None, "context": 4096, "threads": 2, "seed": 0, "cache": None,
}


class ChatBackend(Protocol):
    """Sends one chat request and returns the OpenAI chat-completion response as a dict."""

    model_id: str

    def send(self, body: dict[str, Any]) -> dict[str, Any]: ...


class OpenAIEndpoint:
    """POST /chat/completions on an OpenAI-compatible server, with timeouts and retries (rankbench.io.http)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None,
                 timeout: float = BACKEND_DEFAULTS["timeout"], retries: int = BACKEND_DEFAULTS["retries"],
                 backoff: float = BACKEND_DEFAULTS["backoff"]) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model_id, self.api_key, self.timeout = model, api_key, timeout
        self.retries, self.backoff = retries, backoff

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """The response of one request; 408/429/5xx, timeouts and dropped connections are retried with backoff."""
        raw = post_json(self.url, {"model": self.model_id, **body}, self.api_key, self.timeout, self.retries,
                        self.backoff, "llm")
        return parse_response(raw, self.url)


def parse_response(raw: bytes, source: str) -> dict[str, Any]:
    """A chat-completion response, checked to hold choices[0].message.content."""
    try:
        response = json.loads(raw)
        content = response["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise InputError(source, "response", f"is not an OpenAI chat completion: {excerpt(raw, 200)!r}",
                         "Point llm.base_url at an OpenAI-compatible /v1 endpoint (it must serve /chat/completions)."
                         ) from None
    if not isinstance(content, str):
        raise InputError(source, "response", "has no text in choices[0].message.content",
                         "Use a chat model that returns text.")
    return response


class LocalModel:
    """A GGUF model run in-process by xllamacpp (no server); loaded on the first request that misses the cache."""

    def __init__(self, model_path: str | None, context: int = BACKEND_DEFAULTS["context"],
                 threads: int = BACKEND_DEFAULTS["threads"], seed: int = BACKEND_DEFAULTS["seed"]) -> None:
        self.path = Path(model_path) if model_path else None
        if self.path is not None and not self.path.is_file():
            raise InputError(self.path, None, "is not a file", "Give llm.model_path as the path of a GGUF model.")
        name = self.path.name if self.path else "packaged:qwen2.5-coder-1.5b-instruct-q4_k_m"
        self.model_id = f"gguf:{name}"
        self.context, self.threads, self.seed = context, threads, seed
        self._server: Any = None

    def _load(self) -> Any:
        try:
            import xllamacpp
        except ImportError:
            raise InputError(None, "llm.backend local", "needs the xllamacpp package", INSTALL_HINT) from None
        params = xllamacpp.CommonParams()
        params.model.path = str(self.path or packaged_model())
        params.n_ctx = self.context
        params.n_parallel = 1
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.sampling.seed = self.seed
        params.sampling.temp = 0.0
        params.warmup = False
        params.verbosity = 1  # llama.cpp errors only: its info lines (several per request) flooded the console
        return xllamacpp.Server(params)

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """The response of one request, from the in-process llama.cpp server."""
        if self._server is None:
            self._server = self._load()
        response = self._server.handle_chat_completions(body)
        if isinstance(response, dict) and "error" in response:
            raise InputError(self.model_id, "request", f"failed: {response['error']}",
                             "Shorten the prompt or raise llm.context.")
        return parse_response(json.dumps(response).encode("utf-8"), self.model_id)


class Chat:
    """Deterministic, cached chat requests: the same (model, messages, parameters) is sent once, ever."""

    def __init__(self, backend: ChatBackend, cache_dir: Path, seed: int = 0) -> None:
        self.backend, self.cache_dir, self.seed = backend, Path(cache_dir), seed
        self.sent = 0
        self.tokens: int | None = 0  # billed for the requests sent (the `usage` field); None once one reported none

    def request(self, messages: Messages, max_tokens: int, logprobs: int = 0) -> dict[str, Any]:
        """The response to these messages (from the cache when seen before); logprobs = top tokens to return."""
        body: dict[str, Any] = {"messages": [dict(m) for m in messages], "max_tokens": max_tokens,
                                "temperature": 0.0, "seed": self.seed}
        if logprobs:
            body.update(logprobs=True, top_logprobs=logprobs)
        key = hashlib.sha256(json.dumps({"model": self.backend.model_id, **body}, sort_keys=True,
                                        ensure_ascii=False).encode("utf-8")).hexdigest()
        path = self.cache_dir / key[:2] / f"{key}.json"
        if path.exists():
            try:
                return parse_response(path.read_bytes(), str(path))
            except InputError as corrupt:  # never trusted: named, removed and asked again
                logging.warning("cached response %s is corrupt (%s): removed; the request is sent again", path,
                                corrupt.problem)
                path.unlink(missing_ok=True)
        # masked before it is kept or used: the cache is a file, and replies reach pages and question files
        response = json.loads(redact(json.dumps(self.backend.send(body), ensure_ascii=False)))
        self.sent += 1
        billed = (response.get("usage") or {}).get("total_tokens")
        self.tokens = None if billed is None or self.tokens is None else self.tokens + int(billed)
        write_text(json.dumps(response, ensure_ascii=False), path)
        return response

    def text(self, messages: Messages, max_tokens: int) -> str:
        """The assistant's reply text."""
        return self.request(messages, max_tokens)["choices"][0]["message"]["content"]


def first_token_probabilities(response: Mapping[str, Any]) -> dict[str, float] | None:
    """Probability of each top candidate for the first generated token (lower-cased, stripped), if returned."""
    try:
        top = response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    except (KeyError, IndexError, TypeError):
        return None
    probabilities: dict[str, float] = {}
    for candidate in top:
        token = str(candidate.get("token", "")).strip().lower()
        probabilities[token] = probabilities.get(token, 0.0) + math.exp(float(candidate["logprob"]))
    return probabilities


def chat_from_spec(spec: Mapping[str, Any]) -> Chat:
    """A Chat from the config's `llm` block (`backend: openai` or `local`), with the library's defaults."""
    settings = {**BACKEND_DEFAULTS, **spec}
    cache = Path(settings["cache"]) if settings["cache"] else default_cache_dir() / "llm-requests"
    if settings["backend"] == "openai":
        if not settings["base_url"] or not settings["model"]:
            raise InputError("config", "llm", "backend openai needs `base_url` and `model`",
                             "Example: {backend: openai, base_url: 'http://127.0.0.1:11434/v1', model: qwen2.5}.")
        check_base_url(settings["base_url"], "llm")
        key = api_key(settings["api_key_env"], "llm") if settings["api_key_env"] else None
        backend: ChatBackend = OpenAIEndpoint(settings["base_url"], settings["model"], key,
                                              float(settings["timeout"]), int(settings["retries"]),
                                              float(settings["backoff"]))
    else:
        backend = LocalModel(settings["model_path"], int(settings["context"]), int(settings["threads"]),
                             int(settings["seed"]))
    return Chat(backend, cache, int(settings["seed"]))
