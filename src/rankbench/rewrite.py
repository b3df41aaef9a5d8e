"""Query rewriting: rewrites frozen in a file (e.g. made by an LLM), and RM3 pseudo-relevance feedback for BM25."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import pandas as pd

from rankbench.bm25 import Analyzer, search_weighted
from rankbench.errors import InputError
from rankbench.filters import ChunkMasks
from rankbench.loaders import read_jsonl


def load_rewrites(path: Path, questions: pd.DataFrame) -> pd.DataFrame:
    """`qid, question` with each question's rewritten text, in question order.

    The file is JSONL, one line per question: {"qid": "q001", "query": "rewritten text"}; every question of the
    version needs exactly one line, and no line may name another qid.
    """
    texts: dict[str, str] = {}
    for number, record in read_jsonl(path):
        qid, query = record.get("qid"), record.get("query")
        if not isinstance(qid, str) or not isinstance(query, str) or not query.strip():
            raise InputError(path, f"line {number}", "needs a string `qid` and a non-empty string `query`",
                             'Each line reads {"qid": "q001", "query": "rewritten text"}.')
        if qid in texts:
            raise InputError(path, f"line {number}", f"rewrites qid {qid!r} a second time",
                             "Keep one rewrite per question.")
        texts[qid] = query
    known = set(questions["qid"])
    unknown = sorted(texts.keys() - known)
    if unknown:
        raise InputError(path, f"qid {unknown[0]!r}", f"is not a question of this version ({len(unknown)} unknown)",
                         "Rewrite the questions of the version the file sits next to.")
    missing = [qid for qid in questions["qid"] if qid not in texts]
    if missing:
        raise InputError(path, f"qid {missing[0]!r}", f"has no rewrite ({len(missing)} questions missing)",
                         "Give every question a line (copy the question unchanged if it needs no rewrite).")
    return pd.DataFrame({"qid": questions["qid"].to_numpy(), "question": [texts[q] for q in questions["qid"]]})


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


def _l1(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {term: value / total for term, value in weights.items()} if total > 0 else {}


def rm3_queries(index: bm25s.BM25, analyzer: Analyzer, queries: Sequence[str], texts: Sequence[str], rm3: RM3,
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
