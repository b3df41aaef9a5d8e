"""Benchmark the workflow's corpus-embedding function against a bare SentenceTransformer.encode.

Usage: .venv/bin/python benchmarks/bench_encoding.py [--passages 1000] [--batch-size 32] [--repeats 3]

Both encode the same passages (the demo's chunks repeated, so lengths vary as in a real corpus) with the
packaged MiniLM, the same batch size, on the CPU. The workflow side is
rankbench.retrieval.encoders.cache.embed_passages with an empty cache (hashing + encode + normalize), i.e. what
an embed_corpus job computes; the reference is SentenceTransformer.encode(normalize_embeddings=True). Prints the
median of the repeats and the ratio (target <= 1.10).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from rankbench.corpus.chunking import ChunkerSpec, chunk_corpus, passage_text
from rankbench.retrieval.encoders.base import EncoderSpec
from rankbench.retrieval.encoders.cache import embed_passages
from rankbench.retrieval.encoders.kinds import load_encoder

DEMO_CORPUS = Path(__file__).resolve().parents[1] / "data" / "demo" / "corpus.jsonl"
NO_CACHE = (np.zeros(0, dtype="S32"), np.zeros((0, 0), dtype=np.float32))


def demo_passages(n: int) -> list[str]:
    """n passages: the demo's chunks (title + text, as the workflow indexes them), repeated in order."""
    import pandas as pd

    documents = pd.DataFrame([json.loads(line) for line in DEMO_CORPUS.read_text(encoding="utf-8").splitlines()])
    texts = passage_text(chunk_corpus(documents, ChunkerSpec(kind="sections", size=1500, overlap=200)))
    return [texts[i % len(texts)] + f" ({i // len(texts)})" for i in range(n)]


def main() -> int:
    """Time both sides alternately (the machine is shared) and print medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = demo_passages(args.passages)
    encoder = load_encoder(EncoderSpec(batch_size=args.batch_size, device="cpu"))
    model = encoder.model
    model.encode(texts[:64], batch_size=args.batch_size)  # warm-up
    ours, bare = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        vectors, encoded = embed_passages(encoder, texts, *NO_CACHE)
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        reference = model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True)
        bare.append(time.perf_counter() - start)
    assert encoded == len(texts)
    np.testing.assert_allclose(vectors, reference, atol=1e-5)
    ours_s, bare_s = statistics.median(ours), statistics.median(bare)
    print(f"{len(texts)} passages, batch size {args.batch_size}, {args.threads} threads, {args.repeats} repeats")
    print(f"bare SentenceTransformer.encode: {bare_s:.2f} s ({len(texts) / bare_s:.0f} passages/s)")
    print(f"rankbench embed_passages:        {ours_s:.2f} s ({len(texts) / ours_s:.0f} passages/s)")
    print(f"ratio (rankbench / bare): {ours_s / bare_s:.3f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
