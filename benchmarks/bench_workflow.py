"""Benchmark the workflow's own overhead on a copy of the demo: cold run, no-op rerun, dry run, and a new
question-set version (time and jobs) against the cold run; and the no-op rerun and dry run against bare Snakemake.

Usage: .venv/bin/python benchmarks/bench_workflow.py [--cores 2] [--repeats 3] [--keep] [--workdir DIR]
       .venv/bin/python benchmarks/bench_workflow.py --cold-only [--against CHECKOUT] [--cores 2,4] [--pairs N]

Each step runs `snakemake` in a temporary copy of config/config.yaml and data/demo (PYTHONPATH must point at this
checkout's src). The references, measured in the same invocation: the cold run, and the floor of a bare Snakefile
with as many rules and trivial `touch` jobs as the demo, completed once, then rerun (nothing to do) and dry-run
by the same Python; the no-op and dry-run figures (wall and CPU seconds) are medians of --repeats, demo and bare
interleaved. `--workdir` reuses a copy kept by --keep: it brings it up to date for config.yaml (the v3 step added a
history record), then measures the no-op, dry run and floor only.

After every cold run, a per-rule breakdown: jobs, and the wall and CPU seconds their benchmark files record, summed
per rule. `--cold-only` runs the cold run alone, once per value of `--cores` (a comma-separated list), and with
`--against CHECKOUT` (another commit's tree, e.g. `git archive <commit> | tar -x -C DIR`: its Snakefile and src)
the same cold runs of that checkout, alternated with this one's, so that both see the same machine load; per-rule
figures are printed side by side. `--pairs N` repeats each cold run N times, alternated, and prints the medians and
the median ratio (this VM's speed drifts by a third within minutes: one pair can mislead).
"""

from __future__ import annotations

import argparse
import csv
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

from rankbench.io.frozen import freeze

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "workflow" / "Snakefile"


def snakefile_of(repo: Path) -> Path:
    """A checkout's Snakefile: workflow/Snakefile, or Snakefile at the top in trees older than the catalog layout."""
    return repo / "workflow" / "Snakefile" if (repo / "workflow" / "Snakefile").exists() else repo / "Snakefile"


_JOBS = re.compile(r"^total\s+(\d+)$", re.MULTILINE)


def snakemake(workdir: Path, configfile: str, *args: str, repo: Path = REPO) -> tuple[float, str]:
    """Seconds and stdout of one snakemake call in workdir (with repo's Snakefile and src); a failure stops the
    benchmark with its stderr."""
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile_of(repo)), "--directory", str(workdir),
               "--configfile", str(workdir / configfile), *args]
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return seconds, result.stdout


def snakemake_start() -> str:
    """How long `snakemake --version` takes here, with a warning when Snakemake's start stalls: where SLURM's client
    tools are installed but no controller answers, its SLURM plugin waits ~9 s at every start (both trees alike, so
    ratios lean towards 1); `scripts/slurm-cluster.sh start` brings a controller up."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", "--version"], capture_output=True, check=True)
    seconds = time.perf_counter() - start
    stalled = "; STALLED: start a SLURM controller (scripts/slurm-cluster.sh start) or the figures carry ~9 s a run"
    return f"Snakemake starts in {seconds:.1f} s{stalled if seconds > 4 else ''}"


def planned(workdir: Path, configfile: str, *args: str) -> int:
    """Jobs a dry run schedules."""
    _, out = snakemake(workdir, configfile, "--dry-run", "--quiet", "rules", *args)
    match = _JOBS.search(out)
    return int(match.group(1)) if match else 0


def bare_workflow(folder: Path, rules: int, jobs: int) -> Path:
    """A Snakefile of `rules` rules that together make `jobs` empty files with `touch` (the floor's workflow)."""
    folder.mkdir(parents=True)
    per_rule = [jobs // rules + (i < jobs % rules) for i in range(rules)]
    targets = ", ".join(f'expand("out/r{i}/{{n}}.txt", n=range({n}))' for i, n in enumerate(per_rule) if n)
    lines = [f"rule all:\n    input:\n        {targets},\n"]
    lines += [f'rule r{i}:\n    output:\n        "out/r{i}/{{n}}.txt",\n    shell:\n        "touch {{output}}"\n'
              for i, n in enumerate(per_rule) if n]
    (folder / "Snakefile").write_text("\n\n".join(lines))
    return folder


def bare(folder: Path, *args: str) -> float:
    """Seconds of one snakemake call on the bare workflow."""
    command = [sys.executable, "-m", "snakemake", "-s", str(folder / "Snakefile"), "--directory", str(folder), *args]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return seconds


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def floor_comparison(workdir: Path, jobs: int, cores: str, repeats: int) -> None:
    """Print the demo's no-op rerun and dry run against bare Snakemake's, medians of `repeats`, interleaved: wall
    seconds, and CPU seconds (on a loaded machine the wall time mostly measures the load)."""
    rules = len(re.findall(r"^(?:rule|checkpoint) ", "".join(
        path.read_text() for path in [SNAKEFILE, *(REPO / "workflow" / "rules").rglob("*.smk")]), re.M))
    folder = bare_workflow(workdir / "bare", rules, jobs)
    bare(folder, "--cores", cores)
    calls = {"demo no-op": lambda: snakemake(workdir, "config.yaml", "--cores", cores)[0],
             "bare no-op": lambda: bare(folder, "--cores", cores),
             "demo dry run": lambda: snakemake(workdir, "config.yaml", "--dry-run", "--quiet", "rules")[0],
             "bare dry run": lambda: bare(folder, "--dry-run", "--quiet", "rules")}
    wall: dict[str, list[float]] = {step: [] for step in calls}
    cpu: dict[str, list[float]] = {step: [] for step in calls}
    for _ in range(repeats):
        for step, call in calls.items():
            start = _cpu_seconds()
            wall[step].append(call())
            cpu[step].append(_cpu_seconds() - start)
    print(f"against bare Snakemake ({rules} rules, {jobs} touch jobs), --cores {cores}, median of {repeats}")
    print(f"{'step':<10}{'demo s':>9}{'bare s':>9}{'ratio':>8}{'demo CPU s':>12}{'bare CPU s':>12}{'ratio':>8}")
    for step in ("no-op", "dry run"):
        demo, floor = statistics.median(wall[f"demo {step}"]), statistics.median(wall[f"bare {step}"])
        demo_cpu, floor_cpu = statistics.median(cpu[f"demo {step}"]), statistics.median(cpu[f"bare {step}"])
        print(f"{step:<10}{demo:>9.2f}{floor:>9.2f}{demo / floor:>8.2f}{demo_cpu:>12.2f}{floor_cpu:>12.2f}"
              f"{demo_cpu / floor_cpu:>8.2f}")


def rule_times(workdir: Path) -> dict[str, tuple[int, float, float]]:
    """Per rule: jobs, and the wall and CPU seconds their benchmark files record, summed (results/*/benchmarks/<rule>/
    ...; rules without a benchmark file are not counted)."""
    totals: dict[str, tuple[int, float, float]] = {}
    for path in sorted(workdir.glob("results/*/benchmarks/**/*.tsv")):
        parts = path.relative_to(next(p for p in path.parents if p.name == "benchmarks")).parts
        rule = parts[0] if len(parts) > 1 else path.stem  # benchmarks/<rule>/... or benchmarks/<rule>.tsv
        with path.open() as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        jobs, wall, cpu = totals.get(rule, (0, 0.0, 0.0))
        cpu_time = row.get("cpu_time", "NA")
        totals[rule] = (jobs + 1, wall + float(row["s"]), cpu + (float(cpu_time) if cpu_time != "NA" else 0.0))
    return totals


def print_rule_times(columns: dict[str, dict[str, tuple[int, float, float]]]) -> None:
    """The per-rule breakdown of one or more cold runs side by side, slowest rule (by the first run's wall) first."""
    first = next(iter(columns.values()))
    rules = sorted(set().union(*columns.values()), key=lambda r: -first.get(r, (0, 0.0, 0.0))[1])
    header = "".join(f"{name + ' jobs':>16}{'wall s':>9}{'CPU s':>8}" for name in columns)
    print(f"{'rule':<22}{header}")
    for rule in [*rules, "all rules"]:
        cells = []
        for times in columns.values():
            picked = list(times.values()) if rule == "all rules" else [times.get(rule, (0, 0.0, 0.0))]
            jobs, wall, cpu = (sum(t[0] for t in picked), sum(t[1] for t in picked), sum(t[2] for t in picked))
            cells.append(f"{jobs:>16}{wall:>9.1f}{cpu:>8.1f}")
        print(f"{rule:<22}{''.join(cells)}")


def cold_comparison(cores_list: list[str], against: Path | None, keep: bool, pairs: int = 1) -> None:
    """Cold runs of the demo, `pairs` times per --cores value, of this checkout and (alternated with it) of
    `against`: wall and CPU seconds (the whole Snakemake process tree) of each, their medians and the median ratio,
    then the per-rule breakdown of the first runs side by side."""
    repos = {"after": REPO} if against is None else {"before": against.resolve(), "after": REPO}
    columns: dict[str, dict[str, tuple[int, float, float]]] = {}
    print(f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {snakemake_start()}")
    for cores in cores_list:
        measured: dict[str, list[tuple[float, float]]] = {name: [] for name in repos}
        for _ in range(pairs):
            for name, repo in repos.items():
                workdir = Path(tempfile.mkdtemp(prefix=f"rankbench-bench-cold-{name}-"))
                try:
                    shutil.copytree(repo / "data" / "demo", workdir / "data" / "demo")
                    shutil.copy(repo / "config" / "config.yaml", workdir / "config.yaml")
                    start_cpu = _cpu_seconds()
                    seconds, _ = snakemake(workdir, "config.yaml", "--cores", cores, repo=repo)
                    cpu = _cpu_seconds() - start_cpu
                    measured[name].append((seconds, cpu))
                    times = rule_times(workdir)
                    columns.setdefault(f"{name} c{cores}", times)
                    print(f"cold demo, {name} ({repo}) in {workdir}, --cores {cores}: {seconds:.1f} s wall, "
                          f"{cpu:.1f} s CPU, "
                          f"{sum(t[0] for t in times.values())} jobs with a benchmark file; load average now "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
                finally:
                    if not keep:
                        shutil.rmtree(workdir, ignore_errors=True)
        if pairs > 1:
            for name, runs in measured.items():
                print(f"--cores {cores}, {name}: median of {pairs} {statistics.median(r[0] for r in runs):.1f} s wall, "
                      f"{statistics.median(r[1] for r in runs):.1f} s CPU (runs: "
                      f"{', '.join(f'{r[0]:.1f}' for r in runs)} s)")
            if against is not None:
                ratios = [a[0] / b[0] for a, b in zip(measured["after"], measured["before"])]
                print(f"--cores {cores}: after / before, median of the {pairs} pairs {statistics.median(ratios):.3f} "
                      f"({', '.join(f'{r:.3f}' for r in ratios)})")
    print_rule_times(columns)


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
    parser.add_argument("--repeats", type=int, default=3, help="runs of each no-op and dry run against the floor")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    parser.add_argument("--workdir", type=Path, help="a completed copy kept by --keep: floor comparison only")
    parser.add_argument("--cold-only", action="store_true", help="cold runs and their per-rule breakdown only")
    parser.add_argument("--against", type=Path, help="with --cold-only: another checkout, run alternately")
    parser.add_argument("--pairs", type=int, default=1, help="with --cold-only: cold runs of each checkout, alternated")
    args = parser.parse_args()
    if args.cold_only:
        cold_comparison(args.cores.split(","), args.against, args.keep, args.pairs)
        return 0
    if args.workdir:
        shutil.rmtree(args.workdir / "bare", ignore_errors=True)
        snakemake(args.workdir, "config.yaml", "--cores", args.cores)
        jobs = planned(args.workdir, "config.yaml", "--forceall") - 1
        floor_comparison(args.workdir, jobs, args.cores, args.repeats)
        return 0
    print(snakemake_start())
    workdir = Path(tempfile.mkdtemp(prefix="rankbench-bench-workflow-"))
    try:
        shutil.copytree(REPO / "data" / "demo", workdir / "data" / "demo")
        shutil.copy(REPO / "config" / "config.yaml", workdir / "config.yaml")
        cold_jobs = planned(workdir, "config.yaml")
        cold, _ = snakemake(workdir, "config.yaml", "--cores", args.cores)
        print_rule_times({"cold": rule_times(workdir)})
        noop, _ = snakemake(workdir, "config.yaml", "--cores", args.cores)
        dry, _ = snakemake(workdir, "config.yaml", "--dry-run", "--quiet", "rules")
        floor_comparison(workdir, cold_jobs - 1, args.cores, args.repeats)  # the jobs but `all`
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
