"""POST a JSON body to an HTTP API (urllib only) with timeouts and retries: the one client of the OpenAI-compatible
endpoints rankbench talks to (chat completions, embeddings)."""

from __future__ import annotations

import http.client
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from rankbench.errors import InputError

RETRY_STATUS = {408, 429, 500, 502, 503, 504}
# Worth another attempt: the server was busy or dropped the connection. A refused connection or an unknown host
# is not: nothing listens there, which only a fix of the config (or starting the server) changes.
TRANSIENT = (TimeoutError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.IncompleteRead)


def post_json(url: str, body: Mapping[str, Any], api_key: str | None, timeout: float, retries: int, backoff: float,
              setting: str) -> bytes:
    """The raw response to a JSON POST; HTTP 408/429/5xx, timeouts and dropped connections are retried with
    exponential backoff (Retry-After honoured). Failures are InputErrors naming the URL, the HTTP status and an
    excerpt of the body; `setting` is the config key of the endpoint's settings, named in the fix."""
    data = json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    for attempt in range(retries + 1):
        last = attempt == retries
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode("utf-8", "replace")
            if error.code not in RETRY_STATUS or last:
                tried = f" after {attempt + 1} attempts" if attempt else ""
                raise InputError(url, None, f"answered HTTP {error.code}{tried} ({detail.strip() or error.reason})",
                                 f"Check {setting}.model, the API key and the server's log.") from None
            wait = _retry_after(error.headers.get("Retry-After"), backoff * 2 ** attempt)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            if not isinstance(reason, TRANSIENT):
                raise InputError(url, None, f"is unreachable ({reason})",
                                 f"Start the server, or fix {setting}.base_url in the config.") from None
            if last and isinstance(reason, TimeoutError):
                raise InputError(url, None, f"did not answer within {timeout:g} s ({retries + 1} attempts)",
                                 f"Raise {setting}.timeout, or check that the server is not overloaded.") from None
            if last:
                raise InputError(url, None, f"dropped the connection on each of {retries + 1} attempts "
                                 f"({type(reason).__name__}: {reason})", "Check the server's log.") from None
            wait = backoff * 2 ** attempt
        logging.warning("request to %s failed (attempt %d), retrying in %.1f s", url, attempt + 1, wait)
        time.sleep(wait)
    raise AssertionError("unreachable")


def _retry_after(header: str | None, default: float) -> float:
    """Seconds a 429/503 asks us to wait (capped at 60 s), else the backoff delay."""
    try:
        return min(max(float(header), 0.0), 60.0) if header else default
    except ValueError:
        return default
