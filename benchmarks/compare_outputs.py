"""Check that a speed change changes no number: run another checkout (e.g. main's tree) and this one cold on the same
inputs (the demo, or SciFact) and compare every file under results/ byte for byte.

Usage: .venv/bin/python benchmarks/compare_outputs.py --against CHECKOUT [--dataset demo|scifact] [--cores 2]
                                                       [--without-encoder e5]
       .venv/bin/python benchmarks/compare_outputs.py --compare DIR_A DIR_B      # two finished copies only

CHECKOUT is another commit's tree (`git archive main | tar -x -C DIR`: its Snakefile and src). Benchmark files,
logs and caches are left out (timings, and caches keyed by code). A file that differs
is shown again with dates, times, durations, run time stamps in file names and git commits masked: those that then
agree differ in dates and timings only; the rest are listed with their first differing line and make the exit
status 1.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
import sys
import tempfile
from pathlib import Path

import yaml
from bench_workflow import REPO, snakemake

sys.path.insert(0, str(REPO / "tests"))
from workflow_helpers import shared_dataset

SKIPPED_PARTS = {"benchmarks", "logs", "cache", ".snakemake"}
# ISO dates and times, and durations as the cost pages and records print them ("12.3 s", "0:01:02", "1,234 ms").
_TIMING = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?"
                     r"|\b\d+:\d{2}:\d{2}(\.\d+)?\b|\b[\d,]+(\.\d+)?\s?(s|ms|seconds|sec)\b"
                     r"|\d{8}T\d{6}Z"  # a run's time stamp in the history's file names
                     r"|(?<=commit: ).*"  # the checkout's git commit (none in a git archive) ...
                     r"|git commit (`|<code>)[0-9a-f]{40}")  # ... and as the pages' software line names it


def without_encoder(config: dict, encoder: str) -> dict:
    """The config without the encoder and every method that uses it or builds on such a method."""
    methods = config["methods"]
    dropped = {name for name, spec in methods.items()
               if encoder in (spec.get("encoder"), (spec.get("scorer") or {}).get("encoder"))}
    while True:
        more = {name for name, spec in methods.items() if name not in dropped
                and dropped & {*spec.get("inputs", []), spec.get("input"), spec.get("first_stage")}}
        if not more:
            break
        dropped |= more
    config["encoders"].pop(encoder, None)
    config["methods"] = {name: spec for name, spec in methods.items() if name not in dropped}
    return config



def prepare(workdir: Path, dataset: str, repo: Path, without: str | None = None) -> str:
    """Copy the dataset's config and inputs into workdir (from repo), without the encoder `without` and its methods
    when given; returns the config file's name."""
    if dataset == "demo":
        shutil.copytree(repo / "data" / "demo", workdir / "data" / "demo")
        if not without:  # the file itself, comments and all
            shutil.copy(repo / "config" / "config.yaml", workdir / "config.yaml")
            return "config.yaml"
        config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    else:
        folder = shared_dataset(dataset)
        if folder is None:
            sys.exit(f"{dataset}: not found in the shared datasets (../shared/datasets or $RANKBENCH_SHARED_DATASETS)")
        config = yaml.safe_load((repo / "config" / f"{dataset}.yaml").read_text())
        config["dataset"]["path"] = str(folder)
    if without:
        config = without_encoder(config, without)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return "config.yaml"


def outputs(workdir: Path) -> dict[Path, bytes]:
    """Every result file's bytes by its path under workdir/results, benchmark files, logs and caches aside."""
    root = workdir / "results"
    return {Path(_TIMING.sub("<t>", str(path.relative_to(root)))): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and not SKIPPED_PARTS & set(path.relative_to(root).parts)}


def masked(content: bytes) -> list[str] | None:
    """The file's lines with dates, times and durations masked; None for a binary file."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return [_TIMING.sub("<t>", line) for line in text.splitlines()]


def compare(first: Path, second: Path) -> int:
    """Print how the results of two finished copies agree; the count of files that differ in more than timings."""
    a, b = outputs(first), outputs(second)
    only = sorted(set(a) ^ set(b))
    identical = [path for path in a if path in b and a[path] == b[path]]
    timings, different = [], []
    for path in sorted(set(a) & set(b)):
        if a[path] == b[path]:
            continue
        lines_a, lines_b = masked(a[path]), masked(b[path])
        if lines_a is not None and lines_a == lines_b:
            timings.append(path)
        else:
            different.append(path)
    print(f"{len(identical)} files byte-identical, {len(timings)} differ in dates/timings only, {len(different)} "
          f"differ, {len(only)} in one copy only ({first} vs {second})")
    for path in timings:
        print(f"  dates/timings only: {path}")
    for path in different:
        lines_a, lines_b = masked(a[path]), masked(b[path])
        first_diff = "binary" if lines_a is None or lines_b is None else next(
            (line for line in difflib.unified_diff(lines_a, lines_b, lineterm="", n=0)
             if line[:1] in "+-" and not line.startswith(("+++", "---"))), "")
        print(f"  DIFFERS: {path}: {first_diff[:200]}")
    for path in only:
        print(f"  ONLY IN {'first' if path in a else 'second'}: {path}")
    return len(different) + len(only)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="the other checkout (its Snakefile and src)")
    parser.add_argument("--dataset", default="demo", choices=("demo", "scifact"))
    parser.add_argument("--cores", default="2")
    parser.add_argument("--keep", action="store_true", help="keep both copies")
    parser.add_argument("--without-encoder", default=None, help="leave out this encoder and the methods using it")
    parser.add_argument("--compare", type=Path, nargs=2, metavar="DIR", help="compare two finished copies only")
    args = parser.parse_args()
    if args.compare:
        return int(compare(*args.compare) > 0)
    if args.against is None:
        parser.error("--against CHECKOUT or --compare DIR DIR")
    copies = {}
    try:
        for name, repo in (("against", args.against.resolve()), ("this", REPO)):
            copies[name] = workdir = Path(tempfile.mkdtemp(prefix=f"rankbench-compare-{name}-"))
            # the same inputs for both: this checkout's
            configfile = prepare(workdir, args.dataset, REPO, args.without_encoder)
            seconds, _ = snakemake(workdir, configfile, "--cores", args.cores, repo=repo)
            print(f"{name} ({repo}): cold {args.dataset} in {seconds:.1f} s ({workdir})", flush=True)
        return int(compare(copies["against"], copies["this"]) > 0)
    finally:
        if not args.keep:
            for workdir in copies.values():
                shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
