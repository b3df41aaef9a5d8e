"""What the serving probe adds to the demo's cold run, in CPU seconds of the whole process tree (target: at most 15%).

Usage: PYTHONPATH=src .venv/bin/python benchmarks/bench_probe.py [--cores 2] [--pairs N] [--keep]

A cold run of a copy of the demo (config/config.yaml, data/demo) with the probe on: the CPU seconds of the whole
Snakemake process tree (this process's finished children, the job workers included: a job they fork is charged to
them, which its benchmark file does not see), and the probe's own (rule serve_probe: the CPU the job worker reports
for it in its log, the same as its benchmark file's). Printed: probe / (tree − probe), the share the probe adds.
With --pairs N, as many cold runs with `cost.probe: false` too, alternated with the probe's (this VM's speed drifts:
one pair can mislead), and the ratio of the medians of the trees' CPU seconds, probe on over off.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TOOK = re.compile(r"the job took ([0-9.]+) CPU-s")


def tree_cpu() -> float:
    """User + system CPU seconds of this process's finished children (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_run(cores: str, probe: bool, keep: bool) -> tuple[float, float, float]:
    """Wall seconds, whole-tree CPU seconds and the probe job's CPU seconds of one cold demo run."""
    workdir = Path(tempfile.mkdtemp(prefix=f"rankbench-bench-probe-{'on' if probe else 'off'}-"))
    try:
        shutil.copytree(REPO / "data" / "demo", workdir / "data" / "demo")
        config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
        config["cost"] = {**config.get("cost", {}), "probe": probe}
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "workflow" / "Snakefile"), "--directory",
                   str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", cores]
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        start, start_cpu = time.perf_counter(), tree_cpu()
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        wall, cpu = time.perf_counter() - start, tree_cpu() - start_cpu
        if result.returncode != 0:
            sys.exit(f"the cold run failed:\n{result.stderr[-3000:]}")
        log = workdir / "logs" / "demo" / "serve_probe.log"
        found = TOOK.findall(log.read_text()) if log.exists() else []
        probe_cpu = float(found[-1]) if found else 0.0
        print(f"cold demo, probe {'on' if probe else 'off'} ({workdir}): {wall:.1f} s wall, {cpu:.1f} s CPU (tree), "
              f"probe job {probe_cpu:.1f} CPU s; load average now {os.getloadavg()[0]:.1f}", flush=True)
        return wall, cpu, probe_cpu
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", default="2")
    parser.add_argument("--pairs", type=int, default=0, help="also N cold runs with the probe off, alternated")
    parser.add_argument("--keep", action="store_true", help="keep the copies")
    args = parser.parse_args()
    print(f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    on: list[tuple[float, float, float]] = []
    off: list[tuple[float, float, float]] = []
    for _ in range(max(args.pairs, 1)):
        on.append(cold_run(args.cores, True, args.keep))
        if args.pairs:
            off.append(cold_run(args.cores, False, args.keep))
    shares = [probe / (cpu - probe) for _, cpu, probe in on]
    print(f"probe's share of the cold run (probe CPU / the rest of the tree's): "
          f"{', '.join(f'{share:.1%}' for share in shares)}; median {statistics.median(shares):.1%} (target ≤ 15%)")
    if off:
        ratio = statistics.median(cpu for _, cpu, _ in on) / statistics.median(cpu for _, cpu, _ in off)
        print(f"tree CPU, probe on / off, medians of {len(on)} runs each: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
