"""The one redaction of secrets from text that leaves the process (error messages, logs, pages, records): URL
userinfo, bearer tokens, key-shaped strings and query parameters, and the values of the variables that hold keys,
in every form a server or an encoder may write them back in (JSON and backslash escapes, percent-encoding, HTML
character references, base64, the parts of an `Authorization` value)."""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import os
import re
import sys
import threading
import traceback
from types import TracebackType

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
# An Authorization-style value: a scheme, then the credential (for Basic, base64 of user:password).
_SCHEMED = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9_-]*)\s+(?P<credential>\S+)")
_HTML_NAMES = {"&": ("amp",), "<": ("lt",), ">": ("gt",), '"': ("quot",), "'": ("apos",), "/": ("sol",),
               "=": ("equals",), "+": ("plus",), ":": ("colon",), " ": ("nbsp",)}
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
    """text with every secret in it, in any of its encoded forms, replaced by ***."""
    secrets = secret_values()
    if secrets:
        text = _secret_pattern(frozenset(secrets)).sub(MASK, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def excerpt(raw: bytes | str, limit: int) -> str:
    """The first `limit` characters of a server's answer, redacted BEFORE it is cut (a cut would leave the part of a
    secret that the mask no longer recognises)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return redact(text[:limit + 4096])[:limit]


def _derived(secret: str) -> set[str]:
    """The secret and what it holds or is written as: the credential of an `Authorization` value (`Bearer X` → X),
    the user:password inside a Basic credential and its password, and base64 of each."""
    found = {secret}
    schemed = _SCHEMED.fullmatch(secret)
    if schemed:
        found.add(schemed["credential"])
        if schemed["scheme"].lower() == "basic":
            try:
                pair = base64.b64decode(schemed["credential"], validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                pair = ""
            found |= {pair, pair.partition(":")[2]} if ":" in pair else set()
    for value in list(found):
        encoded = value.encode("utf-8")
        found |= {base64.b64encode(encoded).decode(), base64.urlsafe_b64encode(encoded).decode()}
        found |= {form.rstrip("=") for form in list(found)}
    return {value for value in found if len(value) >= MIN_SECRET_LENGTH}


def _character_forms(char: str) -> str:
    """A regex for one character of a secret as any common encoder writes it: itself, backslash-escaped (`\\/`, once
    or more: JSON inside JSON), as a \\uXXXX escape, percent-encoded (its UTF-8 bytes), as an HTML character
    reference, `+` for a space."""
    code = ord(char)
    forms = [re.escape(char), r"\\+" + re.escape(char),
             "".join(f"%(?i:{byte:02x})" for byte in char.encode("utf-8")),
             f"&#0*{code};", f"&#(?i:x0*{code:x});"]
    if code < 0x10000:
        forms.append(rf"\\+(?i:u{code:04x})")
    forms += [f"&{name};" for name in _HTML_NAMES.get(char, ())]
    if char == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


@functools.lru_cache(maxsize=16)
def _secret_pattern(secrets: frozenset[str]) -> re.Pattern[str]:
    """One regex matching every secret in every encoded form, longer secrets first; a lookahead at the characters
    a match can start with lets every other position fail at once (redacting a page-sized text stays cheap)."""
    values = sorted(set().union(*map(_derived, secrets)), key=lambda value: (-len(value), value))
    starts = "".join(sorted({value[0] for value in values} | {"\\", "%", "&", "+"}))
    return re.compile(f"(?=[{re.escape(starts)}])(?:" + "|".join("".join(map(_character_forms, value))
                                                            for value in values) + ")")


def redact_uncaught() -> None:
    """Print any exception nobody catches (in the main thread or another) redacted, as the job's log lines are:
    Python's own hooks would write its traceback, secrets and all, to stderr."""
    def print_redacted(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
        sys.stderr.write(redact("".join(traceback.format_exception(kind, error, trace))))

    def thread_hook(failure: threading.ExceptHookArgs) -> None:
        if failure.exc_value is not None:
            print_redacted(failure.exc_type, failure.exc_value, failure.exc_traceback)

    sys.excepthook, threading.excepthook = print_redacted, thread_hook


class RedactingFilter(logging.Filter):
    """Redacts each record's message (and traceback) before a handler writes it: a log file is a file too."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
