"""The growth curve: the real workflow (bench_million's synthetic passages, BM25, a static encoder in shards, FAISS
flat and HNSW, RRF, evaluation, report) at several corpus sizes with the same 10,000 questions; per stage and size
the CPU seconds, the span and the largest job's memory, the disk, each stage's fitted growth exponent, and what a
power law with that exponent projects for larger corpora.

Usage: PYTHONPATH=src .venv/bin/python benchmarks/bench_growth.py [--sizes 100000 300000 1000000 3000000]
           [--questions 10000] [--passages-per-shard 250000] [--out /tmp/rankbench-growth] [--report-only]
           [--project 10000000 100000000]

Each size runs in <out>/<passages> exactly as `bench_million.py --passages N --shards S` would (its data and the
distilled static model are reused when present). Per-job CPU seconds and peak memory come from the job worker's
line in each job's log (or the benchmark file of a job it did not serve). The exponent of a stage is the slope of
log(figure) against log(passages), least squares over the sizes; the projection extrapolates from the largest size
measured. `oversized_jobs` flags any job above its declared mem_mb or 8 GB.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from bench_million import disk_mb, generate, job_figures, oversized_jobs, run_workflow, stage_figures


def growth_exponent(sizes: np.ndarray, figures: np.ndarray) -> float:
    """Least-squares slope of log(figure) on log(size) over the positive figures: a figure growing as size**e has
    exponent e (1 linear, 0 constant); NaN with fewer than two positive figures."""
    sizes, figures = np.asarray(sizes, dtype=float), np.asarray(figures, dtype=float)
    kept = figures > 0
    if kept.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(sizes[kept]), np.log(figures[kept]), 1)[0])


def run_size(out: Path, passages: int, questions: int, shards: int) -> dict:
    """Generate (or reuse) and run one size; the whole run's figures (a nonzero exit raises)."""
    folder = (out / str(passages)).resolve()
    config = generate(folder, passages, questions, shards)
    started = time.perf_counter()
    if run_workflow(folder, config, cores=2):
        raise SystemExit(f"the workflow failed at {passages:,} passages: see {folder / 'snakemake.log'}")
    return {"passages": passages, "snakemake_s": time.perf_counter() - started}


def size_figures(out: Path, passages: int, questions: int) -> tuple[pd.DataFrame, dict]:
    """The stage table of the run at one size, and its totals (jobs' span, CPU, largest job, disk)."""
    folder = (out / str(passages)).resolve()
    jobs = job_figures(folder)
    over = oversized_jobs(jobs)
    stages = stage_figures(jobs[jobs["rule"] != "all"]).reset_index().assign(passages=passages)
    totals = {"passages": passages, "jobs": len(jobs),
              "span_s": (jobs["end"].max() - jobs["start"].min()).total_seconds(),
              "cpu_s": jobs["cpu_time"].sum(), "largest_job_mb": jobs["max_rss"].max(),
              "largest_job": jobs.loc[jobs["max_rss"].idxmax(), "rule"],
              "results_mb": disk_mb(folder / "results"), "data_mb": disk_mb(folder / f"data-{questions}"),
              "jobs_above_memory": len(over)}
    return stages, totals


def projection(stages: pd.DataFrame, targets: list[int]) -> pd.DataFrame:
    """Per stage: the exponents of CPU seconds and of the largest job's memory, and both projected from the largest
    size measured to each target size by that power law."""
    rows = []
    for stage, figures in stages.groupby("stage", sort=False):
        figures = figures.sort_values("passages")
        last = figures.iloc[-1]
        row = {"stage": stage,
               "cpu_exponent": growth_exponent(figures["passages"], figures["cpu_s"]),
               "memory_exponent": growth_exponent(figures["passages"], figures["max_rss_mb"])}
        for target in targets:
            scale = target / last["passages"]
            row[f"cpu_s@{target:,}"] = last["cpu_s"] * scale ** row["cpu_exponent"]
            row[f"largest_job_mb@{target:,}"] = last["max_rss_mb"] * scale ** row["memory_exponent"]
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> int:
    """Run (or read) every size, print the tables, write them as TSV under --out; 1 if a job went above its
    memory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000, 3_000_000])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--passages-per-shard", type=int, default=250_000)
    parser.add_argument("--project", type=int, nargs="+", default=[10_000_000, 100_000_000])
    parser.add_argument("--out", type=Path, default=Path("/tmp/rankbench-growth"))
    parser.add_argument("--report-only", action="store_true", help="only the figures of the runs already in --out")
    args = parser.parse_args()
    wall = {}
    for passages in [] if args.report_only else args.sizes:
        shards = max(1, -(-passages // args.passages_per_shard))
        print(f"== {passages:,} passages, {args.questions:,} questions, {shards} shards", flush=True)
        wall[passages] = run_size(args.out, passages, args.questions, shards)["snakemake_s"]
    parts = [size_figures(args.out, passages, args.questions) for passages in args.sizes]
    stages = pd.concat([part[0] for part in parts], ignore_index=True)
    totals = pd.DataFrame([part[1] for part in parts])
    if wall:
        totals["snakemake_s"] = totals["passages"].map(wall)
    print(stages.pivot(index="stage", columns="passages", values="cpu_s").to_markdown(floatfmt=".1f"),
          "\n(CPU seconds per stage)\n")
    print(stages.pivot(index="stage", columns="passages", values="span_s").to_markdown(floatfmt=".1f"),
          "\n(seconds from a stage's first job start to its last job end)\n")
    print(stages.pivot(index="stage", columns="passages", values="max_rss_mb").to_markdown(floatfmt=".0f"),
          "\n(MB, the stage's largest job)\n")
    print(totals.to_markdown(index=False, floatfmt=".1f"), "\n")
    for column in ("span_s", "cpu_s", "largest_job_mb", "results_mb"):
        print(f"whole run {column}: exponent {growth_exponent(totals['passages'], totals[column]):.2f}")
    print()
    print(projection(stages, args.project).to_markdown(index=False, floatfmt=".2f"))
    args.out.mkdir(parents=True, exist_ok=True)
    stages.to_csv(args.out / "growth-stages.tsv", sep="\t", index=False)
    totals.to_csv(args.out / "growth-totals.tsv", sep="\t", index=False)
    return int(totals["jobs_above_memory"].sum() > 0)


if __name__ == "__main__":
    raise SystemExit(main())
