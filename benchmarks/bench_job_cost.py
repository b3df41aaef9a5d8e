"""The fixed cost of a job: CPU seconds one more rankbench script job adds to a local run, against one more bare
Snakemake `script:` job that imports nothing (issue 41, target: at most 1.5x).

Usage: .venv/bin/python benchmarks/bench_job_cost.py [--jobs 10,50] [--repeats 3]

In a temporary folder, a Snakefile with the workflow's start and end hooks (the job worker, the scheduler that does not
poll) and two rules: `bare` (touches its output) and `light`, written as every light workflow script is (hands
itself over to the job worker, then imports what workflow/scripts/evaluate.py imports, sizes its threads and logs
through run_script, writes a one-row Parquet file). Each kind runs as its own Snakemake call with few and with many
jobs; the extra CPU seconds of the whole process tree (Snakemake, the worker and every job), divided by the extra
jobs, is the cost of one job, apart from what a run pays once. `light` runs twice: with the worker and with
RANKBENCH_JOB_WORKER=off (every job its own Python process, as before issue 41). Calls alternate, medians of --repeats.
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SNAKEFILE = """
from rankbench.execution.local_run import start_local_run, stop_job_worker

onstart:
    start_local_run(workflow)

onsuccess:
    stop_job_worker()

onerror:
    stop_job_worker()

rule all:
    input: expand("{kind}/{i}.out", kind=config["kind"], i=range(config["jobs"]))

rule bare:
    output: "bare/{i}.out"
    script: "bare.py"

rule light:
    output: "light/{i}.out"
    log: "logs/light/{i}.log"
    script: "light.py"
"""

BARE = '''"""A job that does nothing but make its output."""
open(snakemake.output[0], "w").close()
'''

LIGHT = '''"""A light rankbench job with no work: the imports, thread sizing and logging of a workflow script."""
from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)

{imports}
import pandas as pd

from rankbench.io.files import write_parquet
from rankbench.execution.scripting import run_script


def main(snakemake):
    write_parquet(pd.DataFrame({{"question": ["q1"]}}), snakemake.output[0])


run_script(main, snakemake)
'''


def evaluate_imports() -> str:
    """The top-level import statements of workflow/scripts/evaluate.py (after its hand-over), as source."""
    source = (REPO / "workflow" / "scripts" / "evaluate.py").read_text()
    tree = ast.parse(source)
    statements = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
                  and not (isinstance(node, ast.ImportFrom) and node.module == "rankbench.execution.job_worker")]
    return "\n".join(ast.get_source_segment(source, node) or "" for node in statements)


def _cpu_seconds() -> float:
    """CPU seconds of this process's ended children (each Snakemake call and every process it reaped)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(folder: Path, kind: str, jobs: int, worker: bool) -> tuple[float, float]:
    """CPU and wall seconds of one Snakemake call making `jobs` outputs of `kind` from nothing."""
    shutil.rmtree(folder / kind, ignore_errors=True)
    shutil.rmtree(folder / ".snakemake", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("RANKBENCH_JOB_WORKER", None)
    if not worker:
        env["RANKBENCH_JOB_WORKER"] = "off"
    command = [sys.executable, "-m", "snakemake", "--cores", "2", "--quiet", "all", "--config", f"kind={kind}",
               f"jobs={jobs}"]
    start_cpu = _cpu_seconds()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"snakemake failed ({kind}, {jobs} jobs):\n{result.stderr[-3000:]}")
    return _cpu_seconds() - start_cpu, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="10,50", help="few,many: jobs in the two calls of each kind")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    few, many = (int(n) for n in args.jobs.split(","))
    folder = Path(tempfile.mkdtemp(prefix="rankbench-bench-job-cost-"))
    try:
        (folder / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
        (folder / "bare.py").write_text(BARE)
        (folder / "light.py").write_text(LIGHT.format(imports=evaluate_imports()))
        variants = {"bare script job": ("bare", True), "rankbench job, worker": ("light", True),
                    "rankbench job, own process": ("light", False)}
        per_job: dict[str, list[float]] = {name: [] for name in variants}
        per_job_wall: dict[str, list[float]] = {name: [] for name in variants}
        print(f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {few} and {many} jobs")
        for repeat in range(args.repeats):
            for name, (kind, worker) in variants.items():
                cpu_few, wall_few = run(folder, kind, few, worker)
                cpu_many, wall_many = run(folder, kind, many, worker)
                per_job[name].append((cpu_many - cpu_few) / (many - few))
                per_job_wall[name].append((wall_many - wall_few) / (many - few))
                print(f"repeat {repeat + 1}, {name}: {cpu_few:.2f} / {cpu_many:.2f} CPU-s for {few} / {many} jobs "
                      f"-> {per_job[name][-1]:.3f} CPU-s a job", flush=True)
        bare = statistics.median(per_job["bare script job"])
        print(f"{'job':<28}{'CPU-s a job':>12}{'x bare':>8}{'wall-s a job':>14}")
        for name in variants:
            cpu = statistics.median(per_job[name])
            print(f"{name:<28}{cpu:>12.3f}{cpu / bare:>8.2f}{statistics.median(per_job_wall[name]):>14.3f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
