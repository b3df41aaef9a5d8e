"""Tokens of a text with their character spans: a `tokenizers` tokenizer (a tokenizer.json, or a model folder holding
one, as an encoder's) or the regex fallback. The `tokens` chunker cuts windows of them; the evidence grain counts the
prompt tokens of the chunks a method returns. Neither needs torch."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


def load_tokenizer(tokenizer: str | None) -> Tokenizer:
    """A `tokenizers` tokenizer from a tokenizer.json (a file, or a model folder holding one), else the regex
    fallback (`regex`, None, a folder without tokenizer.json, or the `tokenizers` package not installed)."""
    path = Path(tokenizer) if tokenizer and tokenizer != REGEX_TOKENIZER else None
    if path is not None and path.is_dir():
        path = path / "tokenizer.json"
    if path is not None and path.is_file():
        try:
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError:
            pass
        else:
            model = HFTokenizer.from_file(str(path))
            model.no_padding()  # a model's file may pad to a fixed length or truncate: count the text's own tokens
            model.no_truncation()

            def spans(text: str) -> list[tuple[int, int]]:
                return [(start, end) for start, end in model.encode(text, add_special_tokens=False).offsets
                        if end > start]

            return Tokenizer(str(tokenizer), spans)
    return Tokenizer(REGEX_TOKENIZER, _regex_spans)
