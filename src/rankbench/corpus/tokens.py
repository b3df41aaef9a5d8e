"""Tokens of a text with their character spans: a `tokenizers` tokenizer (a tokenizer.json, or a model folder holding
one, as an encoder's) or the regex fallback. The `tokens` chunker cuts windows of them; the evidence grain counts the
prompt tokens of the chunks a method returns. Neither needs torch."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rankbench.errors import InputError

REGEX_TOKENIZER = "regex"
# The fallback: a word (letters, digits, underscore) or any other non-blank character is one token; close to a
# subword tokenizer's count on prose, under it on rare words and numbers.
_REGEX_TOKENS = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Tokenizer:
    """Character spans [start, end) of a text's tokens; `name` says which tokenizer (the pages name it)."""

    name: str
    spans: Callable[[str], list[tuple[int, int]]]

    def count(self, text: str) -> int:
        """How many tokens the text costs."""
        return len(self.spans(text))


def _regex_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in _REGEX_TOKENS.finditer(text)]


TOKENIZER_FIX = ("Give the path of a tokenizer.json or of a model folder holding one (relative paths start from the "
                 "project folder), or `regex` for the built-in word counter; the `tokenizers` package reads the file "
                 "(`pip install tokenizers`).")


def tokenizer_problem(tokenizer: str | None) -> str | None:
    """Why a tokenizer named in a config cannot be read (None when it can, or when it is `regex` or not named): a
    named file is never silently replaced by the regex fallback."""
    if not tokenizer or tokenizer == REGEX_TOKENIZER:
        return None
    path = Path(tokenizer)
    if path.is_dir() and not (path / "tokenizer.json").is_file():
        return f"{tokenizer!r} is a folder without a tokenizer.json"
    if not path.exists():
        return f"{tokenizer!r} is neither an existing tokenizer.json nor a folder holding one"
    if importlib.util.find_spec("tokenizers") is None:
        return f"{tokenizer!r} needs the `tokenizers` package, which is not installed"
    return None


def load_tokenizer(tokenizer: str | None) -> Tokenizer:
    """A `tokenizers` tokenizer from a tokenizer.json (a file, or a model folder holding one), or the regex fallback
    for `regex` or None; a named tokenizer that cannot be read is an InputError (tokenizer_problem), never the
    fallback in its place."""
    problem = tokenizer_problem(tokenizer)
    if problem:
        raise InputError(tokenizer, None, problem, TOKENIZER_FIX)
    if not tokenizer or tokenizer == REGEX_TOKENIZER:
        return Tokenizer(REGEX_TOKENIZER, _regex_spans)
    from tokenizers import Tokenizer as HFTokenizer

    path = Path(tokenizer)
    model = HFTokenizer.from_file(str(path / "tokenizer.json" if path.is_dir() else path))
    model.no_padding()  # a model's file may pad to a fixed length or truncate: count the text's own tokens
    model.no_truncation()

    def spans(text: str) -> list[tuple[int, int]]:
        return [(start, end) for start, end in model.encode(text, add_special_tokens=False).offsets if end > start]

    return Tokenizer(str(tokenizer), spans)
