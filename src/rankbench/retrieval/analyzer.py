"""The text analyzer shared by the lexical method types (bm25, lucene, rm3 and any new one): one function turns corpus
and queries alike into tokens (NFC, lowercase, optional accent folding, `\\w+` split, stopwords, Snowball stem)."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import Stemmer

LANGUAGES: tuple[str, ...] = tuple(sorted(Stemmer.algorithms()))
# Lucene's English list for English; NLTK's lists (shipped with bm25s) for the others: the name of each in
# bm25s.stopwords, read when first needed (see _bm25s_stopwords).
_STOPWORDS: dict[str, str] = {
    "english": "STOPWORDS_EN",
    "french": "STOPWORDS_FRENCH",
    "german": "STOPWORDS_GERMAN",
    "dutch": "STOPWORDS_DUTCH",
    "spanish": "STOPWORDS_SPANISH",
    "portuguese": "STOPWORDS_PORTUGUESE",
    "italian": "STOPWORDS_ITALIAN",
    "russian": "STOPWORDS_RUSSIAN",
    "swedish": "STOPWORDS_SWEDISH",
    "norwegian": "STOPWORDS_NORWEGIAN",
    "turkish": "STOPWORDS_TURKISH",
    "danish": "STOPWORDS_DANISH",
}
_TOKEN = re.compile(r"\w+")
_LIGATURES = str.maketrans({"œ": "oe", "æ": "ae", "ß": "ss"})


@dataclass(frozen=True)
class Analyzer:
    """Text -> tokens: NFC, lowercase, optional accent folding, `\\w+` split, stopwords, Snowball stem."""

    language: str = "english"
    stopwords: bool = True
    stemming: bool = True
    fold_accents: bool = False

    def __post_init__(self) -> None:
        """Reject unknown languages, and stopword removal where no list exists, at construction."""
        if self.language not in LANGUAGES:
            raise ValueError(
                f"unknown analyzer language {self.language!r}; accepted: {', '.join(LANGUAGES)}"
            )
        if self.stopwords and self.language not in _STOPWORDS:
            raise ValueError(
                f"no stopword list for language {self.language!r}; set stopwords=False "
                f"or use one of: {', '.join(sorted(_STOPWORDS))}"
            )

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokens of each text; the single function used for corpus and queries alike."""
        if isinstance(texts, str):
            raise TypeError("tokenize takes a sequence of texts, not a single string")
        stopset = _stopword_set(self.language, self.fold_accents) if self.stopwords else frozenset()
        stem = _stemmer(self.language) if self.stemming else None
        out: list[list[str]] = []
        for text in texts:
            tokens = _TOKEN.findall(fold_text(text, self.fold_accents))
            if stopset:
                tokens = [t for t in tokens if t not in stopset]
            if stem is not None and tokens:
                tokens = stem(tokens)
            out.append(tokens)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (stored in saved indexes)."""
        return dataclasses.asdict(self)


def fold_text(text: str, fold_accents: bool) -> str:
    """NFC + lowercase, then optionally strip diacritics and expand œ/æ/ß, so variants compare equal."""
    text = unicodedata.normalize("NFC", text).lower()
    if not fold_accents:
        return text
    decomposed = unicodedata.normalize("NFKD", text.translate(_LIGATURES))
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


@cache
def _stopword_set(language: str, fold_accents: bool) -> frozenset[str]:
    """Stopwords of a language, normalized like the text they are compared with."""
    return frozenset(fold_text(w, fold_accents) for w in getattr(_bm25s_stopwords(), _STOPWORDS[language]))


@cache
def _bm25s_stopwords() -> ModuleType:
    """bm25s's stopword lists, a plain data module, loaded from its file when it is there."""
    spec = importlib.util.find_spec("bm25s")  # locates the package (its __init__.py) without running it
    path = Path(spec.origin).with_name("stopwords.py") if spec is not None and spec.origin else None
    if path is None or not path.is_file():
        from bm25s import stopwords

        return stopwords
    # By file, because `from bm25s import stopwords` runs bm25s's __init__, which imports numba and scipy (~0.3 s).
    file_spec = importlib.util.spec_from_file_location("rankbench_bm25s_stopwords", path)
    assert file_spec is not None and file_spec.loader is not None
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return module


def _stemmer(language: str) -> Callable[[list[str]], list[str]]:
    """Snowball stemmer for a language (a fresh one per call: PyStemmer objects are not thread-safe)."""
    return Stemmer.Stemmer(language).stemWords
