"""RM3 pseudo-relevance feedback for BM25 (its settings, `RM3`, are a BM25 method's `prf` block in bm25.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from rankbench.corpus.filters import ChunkMasks
from rankbench.retrieval.analyzer import Analyzer
from rankbench.retrieval.bm25 import RM3, BM25Index, search_weighted


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
