"""Benchmark the workflow's own overhead on a copy of the demo: cold run, no-op rerun, dry run, and a new
question-set version (time and jobs) against the cold run.

Usage: .venv/bin/python benchmarks/bench_workflow.py [--cores 2] [--keep]

Each step runs `snakemake` once in a temporary copy of config/config.yaml and data/demo (PYTHONPATH must point
at this checkout's src). The reference is the cold run measured in the same invocation: every other figure is
printed with its ratio to it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from rankbench.io.frozen import freeze

REPO = Path(__file__).resolve().parents[1]
_JOBS = re.compile(r"^total\s+(\d+)$", re.MULTILINE)


def snakemake(workdir: Path, configfile: str, *args: str) -> tuple[float, str]:
    """Seconds and stdout of one snakemake call in workdir; a failure stops the benchmark with its stderr."""
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(workdir / configfile), *args]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return seconds, result.stdout


def planned(workdir: Path, configfile: str) -> int:
    """Jobs a dry run schedules."""
    _, out = snakemake(workdir, configfile, "--dry-run", "--quiet", "rules")
    match = _JOBS.search(out)
    return int(match.group(1)) if match else 0


def add_version(workdir: Path) -> str:
    """Register v3 (v2's questions and rewrites under a new name), frozen as a user would; returns its config file."""
    questions = workdir / "data" / "demo" / "questions"
    for name in ("v3", "v3.rewrites.keywords"):
        shutil.copy(questions / f"v2{name[2:]}.jsonl", questions / f"{name}.jsonl")
        freeze(questions / f"{name}.jsonl", name, questions / "frozen.lock")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["qsets"]["v3"] = {"path": "data/demo/questions/v3.jsonl",
                             "rewrites": {"keywords": "data/demo/questions/v3.rewrites.keywords.jsonl"}}
    (workdir / "config-v3.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return "config-v3.yaml"


def main() -> int:
    """Run the steps in order and print seconds, jobs and ratios to the cold run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", default="2")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="rankbench-bench-workflow-"))
    try:
        shutil.copytree(REPO / "data" / "demo", workdir / "data" / "demo")
        shutil.copy(REPO / "config" / "config.yaml", workdir / "config.yaml")
        cold_jobs = planned(workdir, "config.yaml")
        cold, _ = snakemake(workdir, "config.yaml", "--cores", args.cores)
        noop, _ = snakemake(workdir, "config.yaml", "--cores", args.cores)
        dry, _ = snakemake(workdir, "config.yaml", "--dry-run", "--quiet", "rules")
        v3 = add_version(workdir)
        v3_jobs = planned(workdir, v3)
        version, _ = snakemake(workdir, v3, "--cores", args.cores)
        print(f"demo workflow, --cores {args.cores}, in {workdir}")
        print(f"{'step':<28}{'seconds':>9}{'jobs':>7}{'ratio to cold':>15}")
        for step, seconds, jobs in [("cold run (reference)", cold, cold_jobs), ("no-op rerun", noop, 0),
                                    ("dry run", dry, 0), ("new question-set version", version, v3_jobs)]:
            print(f"{step:<28}{seconds:>9.1f}{jobs:>7}{seconds / cold:>15.3f}")
        print(f"new version: {v3_jobs} of {cold_jobs} jobs ({v3_jobs / cold_jobs:.2f}) in {version / cold:.2f} of "
              "the cold run's time")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
