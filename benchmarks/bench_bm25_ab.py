"""A/B of numba BM25 kernel files in one process: each checked identical to the numpy backend, then timed in
alternated calls beside bm25s's own numba retrieve, on bench_bm25.py's synthetic corpus or a BEIR folder's
(median CPU time).

Usage: .venv/bin/python benchmarks/bench_bm25_ab.py [KERNEL.py ...] [--passages 100000] [--queries 1000] [--repeats 11]
           [--beir ../shared/datasets/scifact [--keep-stopwords]] [--top-k 100]

With no file, the installed rankbench.retrieval.bm25_numba alone. A kernel file is a copy of bm25_numba.py (say,
`git show main:src/rankbench/retrieval/bm25_numba.py > /tmp/old_kernel.py`), so old and new run side by side on
the same index in the same process: on a shared machine the neighbours' load then changes both alike. With --beir, the
folder's corpus.jsonl (title and text) and every query of its queries.jsonl, analyzed as a project would by default
(stopwords removed, Snowball stems) or with --keep-stopwords, which leaves common words in and so terms of IDF 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from bench_bm25 import K1, TOP_K, B, bm25s_numba, synthetic_corpus

from rankbench.io.loaders import load_beir_corpus, read_jsonl
from rankbench.retrieval import bm25_numba
from rankbench.retrieval.analyzer import Analyzer
from rankbench.retrieval.bm25 import BM25Params, build_index, search


def kernel_from(path: Path):
    """The kernel module in a bm25_numba.py copy, under a name of its own (numba caches it apart)."""
    spec = importlib.util.spec_from_file_location(f"ab_kernel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # numba's cache finds the compiled code's module again by this name
    spec.loader.exec_module(module)
    return module


def beir_texts(folder: Path) -> tuple[list[str], list[str]]:
    """Passages (title and text) and every query text of a BEIR folder."""
    documents = load_beir_corpus(folder / "corpus.jsonl")
    passages = (documents["title"] + " " + documents["text"]).str.strip().tolist()
    return passages, [record["text"] for _, record in read_jsonl(folder / "queries.jsonl")]


def main() -> int:
    """Build the index, check every kernel against numpy, time them alternated and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", type=Path)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--beir", type=Path, help="a BEIR folder instead of the synthetic corpus")
    parser.add_argument("--keep-stopwords", action="store_true", help="with --beir: leave stopwords in")
    parser.add_argument("--top-k", type=int, default=TOP_K)
    args = parser.parse_args()
    if args.beir and not all((args.beir / name).is_file() for name in ("corpus.jsonl", "queries.jsonl")):
        parser.error(f"--beir {args.beir}: a BEIR folder holds corpus.jsonl and queries.jsonl")
    kernels = {path.stem: kernel_from(path) for path in args.kernels} or {"installed": bm25_numba}
    if args.beir:
        passages, queries = beir_texts(args.beir)
        analyzer = Analyzer(stopwords=not args.keep_stopwords)
        source = f"{args.beir.name} ({len(passages):,} passages{', stopwords kept' if args.keep_stopwords else ''})"
    else:
        passages, queries = synthetic_corpus(args.passages, args.queries)
        analyzer = Analyzer(stopwords=False, stemming=False)
        source = f"synthetic ({len(passages):,} passages)"
    index = build_index(passages, analyzer, BM25Params(variant="robertson", k1=K1, b=B))
    top_k = min(args.top_k, index.num_docs)
    expected = search(index, analyzer, queries, top_k)
    vocab = index.vocab
    tokens = analyzer.tokenize(queries)
    known = [[(vocab[t], float(w)) for t, w in Counter(row).items() if t in vocab] for row in tokens]
    flat = (index.scores, np.cumsum([0] + [len(row) for row in known], dtype=np.int64),
            np.array([t for row in known for t, _ in row], dtype=np.int64),
            np.array([w for row in known for _, w in row], dtype=np.float64), np.zeros(0),
            np.zeros((1, 0), dtype=bool), np.zeros(len(known), dtype=np.int64), top_k)
    calls = {}
    for name, kernel in kernels.items():
        positions, scores = kernel.search_all(*flat)  # compiles (or loads) it, then checks it
        assert np.array_equal(positions, expected[0]) and np.array_equal(scores, expected[1]), f"{name} != numpy"
        calls[name] = (lambda k: lambda: k.search_all(*flat))(kernel)
    query_ids = [[vocab[t] for t in row if t in vocab] for row in tokens]
    bm25s_numba(index, query_ids[:1], top_k)
    calls["bm25s numba"] = lambda: bm25s_numba(index, query_ids, top_k)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for repeat in range(args.repeats):
        for name in list(calls)[:: 1 if repeat % 2 == 0 else -1]:
            start = time.process_time()
            calls[name]()
            times[name].append(time.process_time() - start)
    medians = {name: 1e3 * float(np.median(values)) for name, values in times.items()}
    first = next(iter(medians.values()))
    largest = np.maximum.reduceat(index.scores["data"], index.scores["indptr"][:-1])  # every term has a posting
    zero_terms = set(np.flatnonzero(largest <= 0).tolist())
    with_zero = sum(any(term in zero_terms for term, _ in row) for row in known)
    print(f"load average {os.getloadavg()[0]:.1f}; {source}, {len(queries):,} queries ({with_zero:,} with a term "
          f"of IDF 0), top {top_k}; median CPU ms per call of {args.repeats} alternated (every kernel identical to "
          "numpy):")
    for name, value in medians.items():
        print(f"  {name:<24} {value:8.1f} ms   x{value / first:.3f} of the first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
