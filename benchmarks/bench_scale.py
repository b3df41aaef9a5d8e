"""Scale benchmark: a synthetic corpus (deterministic) through BM25, dense exact and HNSW search, and RRF, with the
library functions the workflow's rules call; wall time per stage and peak memory.

Usage: .venv/bin/python benchmarks/bench_scale.py [--passages 100000] [--queries 1000] [--dim 384]

Passages and queries are bench_bm25's Zipf pseudo-text. Dense vectors are synthetic unit vectors with topic
structure (queries: a passage's vector plus noise), so the figures measure indexing and search, not the encoder
(bench_encoding.py measures that; divide the passages by its passages/s for the embedding time). References
measured in the same run: bare faiss `IndexFlatIP.search` for exact search, the exact top 100 for HNSW's recall.
Peak RSS is the process's running maximum (getrusage) after each stage.
"""

from __future__ import annotations

import argparse
import resource
import time

import faiss
import numpy as np
import pandas as pd
from bench_bm25 import synthetic_corpus

from rankbench.io.ranked_lists import run_from_topk
from rankbench.retrieval import bm25, dense
from rankbench.retrieval.analyzer import Analyzer
from rankbench.retrieval.encoders.base import unit_vectors
from rankbench.retrieval.fusion import reciprocal_rank_fusion

SEED = 7
DEPTH = 100
LATENT = 32


def peak_rss_mb() -> float:
    """The process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthetic_vectors(n_passages: int, n_queries: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors with text-embedding-like structure (topics in a 32-dimensional latent space, projected to dim),
    and queries near one passage each. Isotropic random vectors would be HNSW's worst case, unlike real ones."""
    rng = np.random.default_rng(SEED)
    centers = rng.standard_normal((1000, LATENT), dtype=np.float32)
    latent = centers[rng.integers(len(centers), size=n_passages)] + 0.5 * rng.standard_normal(
        (n_passages, LATENT), dtype=np.float32)
    projection = rng.standard_normal((LATENT, dim), dtype=np.float32)
    passages = unit_vectors(latent @ projection + 0.1 * rng.standard_normal((n_passages, dim), dtype=np.float32))
    sources = rng.integers(n_passages, size=n_queries)
    noise = rng.standard_normal((n_queries, dim), dtype=np.float32)
    return passages, unit_vectors(passages[sources] + 0.5 * noise / np.sqrt(dim))


def main() -> int:
    """Run every stage once and print its seconds and the peak memory after it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    stages: list[tuple[str, float, float]] = []
    results: dict[str, object] = {}

    def stage(name: str, fn):
        start = time.perf_counter()
        results[name] = fn()
        stages.append((name, time.perf_counter() - start, peak_rss_mb()))
        return results[name]

    passages, queries = stage("generate text", lambda: synthetic_corpus(args.passages, args.queries))
    chunks = pd.DataFrame({"chunk_id": [f"c{i}" for i in range(len(passages))],
                           "doc_id": [f"d{i}" for i in range(len(passages))]})
    qids = [f"q{i}" for i in range(len(queries))]
    analyzer, params = Analyzer(language="english"), bm25.BM25Params()
    index = stage("bm25 index", lambda: bm25.build_index(passages, analyzer, params))
    bm25_run = stage("bm25 search + run", lambda: run_from_topk(
        qids, *bm25.search(index, analyzer, queries, DEPTH), chunks, DEPTH, drop_nonpositive=True))
    vectors, query_vectors = stage("generate vectors", lambda: synthetic_vectors(len(passages), len(queries), args.dim))
    flat = stage("flat index", lambda: dense.build_index(vectors))
    exact = stage("flat search", lambda: dense.search(flat, query_vectors, DEPTH))
    stage("bare faiss flat search (ref)", lambda: flat.search(query_vectors, DEPTH))
    hnsw_spec = dense.IndexSpec(kind="hnsw")
    hnsw = stage("hnsw index (M32, efc40)", lambda: dense.build_index(vectors, hnsw_spec))
    approx = stage("hnsw search (ef 100)", lambda: dense.search(hnsw, query_vectors, DEPTH, hnsw_spec))
    dense_run = run_from_topk(qids, *exact, chunks, DEPTH)
    stage("rrf (bm25 + dense)", lambda: reciprocal_rank_fusion([bm25_run, dense_run], k=60, depth=DEPTH))
    recall = dense.recall_against_exact(approx[0], exact[0], [10, 100])

    times = dict((name, seconds) for name, seconds, _ in stages)
    print(f"{len(passages):,} passages, {len(queries):,} queries, depth {DEPTH}, dim {args.dim}, "
          f"faiss {faiss.omp_get_max_threads()} OpenMP threads")
    print(f"{'stage':<32}{'seconds':>9}{'peak RSS MB':>13}")
    for name, seconds, rss in stages:
        print(f"{name:<32}{seconds:>9.2f}{rss:>13.0f}")
    print(f"exact search, rankbench.retrieval.dense.search (1 thread, deterministic) / bare faiss: "
          f"{times['flat search'] / times['bare faiss flat search (ref)']:.2f}")
    print(f"hnsw search / exact search: {times['hnsw search (ef 100)'] / times['flat search']:.3f}; "
          + ", ".join(f"recall@{row.k} vs exact {row.recall_mean:.3f}" for row in recall.itertuples()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
