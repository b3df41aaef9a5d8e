"""The one redaction of secrets from text that leaves the process (error messages, logs, pages, records): URL
userinfo, bearer tokens, key-shaped strings and query parameters, and the values of the variables that hold keys."""

from __future__ import annotations

import logging
import os
import re

MASK = "***"
MIN_SECRET_LENGTH = 4  # a registered key shorter than this would mask ordinary words
# Environment variables whose values are secrets whether or not the config names them (HF_TOKEN, OPENAI_API_KEY, …),
# when at least MIN_ENVIRONMENT_SECRET characters long (a flag such as `true` is no secret).
SECRET_VARIABLE = re.compile(r"(^|_)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(_|$)", re.IGNORECASE)
MIN_ENVIRONMENT_SECRET = 8
_PATTERNS = [
    (re.compile(r"(?<=://)[^/\s@'\"]+@"), MASK + "@"),  # scheme://user:password@host
    (re.compile(r"\b((?i:bearer)|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + MASK),
    (re.compile(r"([?&;](?:api[_-]?key|key|token|access_token|password|secret)=)[^&\s'\"]+", re.IGNORECASE),
     r"\1" + MASK),
    # OpenAI, Hugging Face, GitHub and Slack keys (not identifiers such as hf_hub_download)
    (re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abp]-[A-Za-z0-9-]{10,})"),
     MASK),
]
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask this value (an API key read from the variable a config names) in everything redacted from now on."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        _registered.add(value)


def secret_values() -> set[str]:
    """The values redact masks: registered keys and those of the environment's secret-named variables."""
    found = {value for name, value in os.environ.items() if SECRET_VARIABLE.search(name)}
    return {value for value in found if len(value) >= MIN_ENVIRONMENT_SECRET} | _registered


def redact(text: str) -> str:
    """text with every secret in it replaced by ***."""
    for value in sorted(secret_values(), key=len, reverse=True):
        text = text.replace(value, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """Redacts each record's message (and traceback) before a handler writes it: a log file is a file too."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
