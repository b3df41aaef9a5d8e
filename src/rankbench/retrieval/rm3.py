"""Query rewriting: rewrites frozen in a file (e.g. made by an LLM), and RM3 pseudo-relevance feedback for BM25."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rankbench.corpus.filters import ChunkMasks
from rankbench.retrieval.bm25 import DEFAULT_BACKEND, Analyzer, BM25Index, index_keys, search_weighted


@dataclass(frozen=True)
class RM3:
    """RM3 expansion (Lavrenko & Croft; as in Anserini): `fb_terms` terms from the top `fb_docs` passages,
    interpolated with the original query at `original_weight`. Defaults are Anserini's."""

    fb_docs: int = 10
    fb_terms: int = 10
    original_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.fb_docs < 1 or self.fb_terms < 1 or not 0 <= self.original_weight <= 1:
            raise ValueError(f"RM3 needs fb_docs >= 1, fb_terms >= 1 and 0 <= original_weight <= 1, got {self}")


def bm25_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A BM25 method's analyzer, BM25 and RM3 settings with the library's defaults filled in (effective config)."""
    settings = {**index_keys(spec), "backend": spec.get("backend", DEFAULT_BACKEND)}
    if spec.get("prf") is not None:
        settings["prf"] = asdict(RM3(**spec["prf"]))
    return settings


def _l1(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {term: value / total for term, value in weights.items()} if total > 0 else {}


def rm3_queries(index: BM25Index, analyzer: Analyzer, queries: Sequence[str], texts: Sequence[str], rm3: RM3,
                allowed: ChunkMasks | None = None) -> list[dict[str, float]]:
    """Expanded queries (analyzed term -> weight) after a first BM25 pass over `texts` (the indexed passages).

    Feedback model: sum over feedback passages of P(w|D) (term frequency / length) × the passage's first-pass
    score, cut to the `fb_terms` heaviest terms (ties by term), L1-normalized, then mixed with the L1-normalized
    original query. Feedback passages respect `allowed`, so filtered methods never learn from hidden passages.
    """
    originals = [_l1(Counter(tokens)) for tokens in analyzer.tokenize(queries)]
    positions, scores = search_weighted(index, originals, rm3.fb_docs, allowed)
    needed = sorted({int(p) for p in positions.reshape(-1) if p >= 0})
    doc_terms = dict(zip(needed, (Counter(tokens) for tokens in analyzer.tokenize([texts[p] for p in needed]))))
    expanded = []
    for original, row_positions, row_scores in zip(originals, positions, scores):
        feedback: Counter[str] = Counter()
        for position, score in zip(row_positions, row_scores):
            if position < 0 or score <= 0:
                continue
            terms = doc_terms[int(position)]
            length = sum(terms.values())
            for term, count in terms.items():
                feedback[term] += score * count / length
        top = sorted(feedback.items(), key=lambda item: (-item[1], item[0]))[: rm3.fb_terms]
        model = _l1(dict(top))
        mixed = {term: rm3.original_weight * weight for term, weight in original.items()}
        for term, weight in model.items() if rm3.original_weight < 1 else ():
            mixed[term] = mixed.get(term, 0.0) + (1 - rm3.original_weight) * weight
        expanded.append(mixed)
    return expanded
