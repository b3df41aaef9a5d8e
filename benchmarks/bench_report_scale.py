"""The report stage's CPU against the number of methods: demo v3's aggregate job (aggregate and pairs, tiers,
breakdowns, evidence aggregate) on 15, 30 and 60 methods, printed as CPU seconds per method.

Usage: PYTHONPATH=src .venv/bin/python benchmarks/bench_report_scale.py --results RESULTS/demo/v3
                                                     [--methods 15 30 60] [--resamples 10000]
                                                     [--pairs decided|all|both]

RESULTS/demo/v3 is a finished demo run's version folder (`make run`, or a copy made by compare_outputs.py --keep):
its per-question metrics of the 14 demo methods are the seed. A grid of N methods is made from them as a grid's
siblings are: method i is demo method i mod 14 with the values of 10% of its questions (drawn with seed i) taken
from another demo method, so the methods differ as a real grid's do, with the demo's questions, kinds, tags,
metrics and evidence. `--pairs all` times the aggregate as it was before issue 53 (every pair at every metric; the
breakdowns as now), `both` the two. CPU is this process's (time.process_time): other jobs on the machine do not
count.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rankbench.evaluation.scoring import aggregate, breakdown_aggregate, tier_table

HEADLINE = [("ndcg", 10), ("rr", 10), ("recall", 10), ("hit", 1)]  # the demo's report.headline
MARGINS = {("ndcg", 10): 0.05, ("recall", 10): 0.05}  # its evaluation.margin


def grid(seed: dict[str, pd.DataFrame], methods: int) -> dict[str, pd.DataFrame]:
    """`methods` per-question tables made from the demo's (see the module's docstring); m000 is bm25, the baseline."""
    names = ["bm25", *sorted(name for name in seed if name != "bm25")]
    made = {}
    for i in range(methods):
        base = seed[names[i % len(names)]].set_index(["qid", "grain", "metric", "k"])
        if i >= len(names):
            other = seed[names[(i * 7 + 3) % len(names)]].set_index(["qid", "grain", "metric", "k"])["value"]
            qids = base.index.get_level_values("qid").unique()
            swapped = np.random.default_rng(i).choice(qids, size=max(1, len(qids) // 10), replace=False)
            rows = base.index.get_level_values("qid").isin(swapped)
            values = base["value"].copy()
            values[rows] = other.reindex(base.index[rows]).fillna(values[rows]).to_numpy()
            base = base.assign(value=values)
        made[f"m{i:03d}"] = base.reset_index()
    return made


def report_cpu(per_query: dict[str, pd.DataFrame], evidence: dict[str, pd.DataFrame], questions: pd.DataFrame,
               resamples: int, all_pairs: bool) -> dict[str, float]:
    """CPU seconds of each part of the aggregate job (workflow/scripts/aggregate.py) on these methods."""
    every_pair = None if all_pairs else set(HEADLINE) | set(MARGINS)
    cpu = {}
    start = time.process_time()
    table, pairs = aggregate(per_query, questions, "demo", "v3", n_resamples=resamples, baseline="m000",
                             margins=MARGINS, every_pair=every_pair)
    cpu["aggregate"] = time.process_time() - start
    start = time.process_time()
    tier_table(per_query, table, pairs, HEADLINE, 0.05, n_resamples=resamples)
    cpu["tiers"] = time.process_time() - start
    start = time.process_time()
    breakdown_aggregate(per_query, questions, "demo", "v3", n_resamples=resamples, baseline="m000")
    cpu["breakdowns"] = time.process_time() - start
    start = time.process_time()
    aggregate(evidence, questions, "demo", "v3", n_resamples=resamples, baseline="m000", every_pair=())
    cpu["evidence"] = time.process_time() - start
    cpu["pair rows"] = float(len(pairs))
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True, help="a finished demo run's results/demo/v3")
    parser.add_argument("--methods", type=int, nargs="+", default=[15, 30, 60])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--pairs", choices=("decided", "all", "both"), default="decided",
                        help="the pairs the aggregate compares: at the metrics read (now), at every metric (before)")
    args = parser.parse_args()
    folder = args.results
    questions = pd.read_parquet(folder / "questions.parquet")
    metrics = {path.stem: pd.read_parquet(path) for path in sorted((folder / "metrics").glob("*.parquet"))}
    evidence = {path.stem: frame for path in sorted((folder / "evidence").glob("*.parquet"))
                if len(frame := pd.read_parquet(path))}
    print(f"demo v3: {len(metrics)} methods, {len(questions)} questions, {args.resamples:,} resamples")
    print("| pairs | methods | pair rows | aggregate CPU-s | tiers | breakdowns | evidence | total | per method |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scope in (["decided", "all"] if args.pairs == "both" else [args.pairs]):
        for n in args.methods:
            per_query = grid(metrics, n)
            chunked = grid(evidence, n) if evidence else {}
            cpu = report_cpu(per_query, chunked, questions, args.resamples, scope == "all")
            total = cpu["aggregate"] + cpu["tiers"] + cpu["breakdowns"] + cpu["evidence"]
            print(f"| {scope} | {n} | {int(cpu['pair rows']):,} | {cpu['aggregate']:.1f} | {cpu['tiers']:.1f} | "
                  f"{cpu['breakdowns']:.1f} | {cpu['evidence']:.1f} | {total:.1f} | {total / n:.2f} |", flush=True)


if __name__ == "__main__":
    main()
