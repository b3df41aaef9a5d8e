"""A whole run against its model forward passes (issue 41, target 4): the workflow on a dataset config, cold, with
some encoders left out, beside one bare process that loads each remaining encoder once and encodes exactly the
texts the run encoded (every chunker's passages that it embedded, every question-set version's questions). The ratio
of CPU seconds is what everything that is not encoding costs.

Usage: PYTHONPATH=src .venv/bin/python benchmarks/bench_forward_floor.py [--config config/scifact.yaml]
           [--without e5] [--cores 2] [--workdir /tmp/rankbench-forward-floor]

The config's relative dataset path is resolved against the repository, as `snakemake --configfile` from the
repository would. Methods of a left-out encoder, and fusions of such methods, are left out with it. Rerankers'
cross-encoder passes are not in the floor (SciFact's config has none). CPU seconds are those of finished child
processes (getrusage), so the job worker and every job it forked are counted.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

# The floor's process: each encoder loaded once, as the encoding jobs load it, and every text encoded once.
FLOOR = """
import json, sys
from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder
for name, work in json.load(open(sys.argv[1])).items():
    encoder = load_encoder(encoder_spec(work["settings"]), None, name)
    encoder.encode_passages(work["passages"])
    encoder.encode_queries(work["questions"])
"""


def without_encoders(config: dict, left_out: set[str]) -> dict:
    """The config without those encoders, the methods that use them, and fusions of left-out methods."""
    config = {**config, "encoders": {name: spec for name, spec in config.get("encoders", {}).items()
                                     if name not in left_out}}
    methods: dict = {}
    for name, spec in config["methods"].items():
        if spec.get("encoder") in left_out or any(source not in methods for source in spec.get("inputs", [])):
            continue
        methods[name] = spec
    config["methods"] = methods
    return config


def child_cpu_seconds() -> float:
    """User + system CPU seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of a command (exits with its output when it fails)."""
    cpu, start = child_cpu_seconds(), time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    return time.perf_counter() - start, child_cpu_seconds() - cpu


def encoded_texts(results: Path, config: dict) -> dict:
    """Per encoder: its settings, the passages of every chunker it embedded and the questions of every version, as
    the run's embedding jobs read them."""
    import pandas as pd

    from rankbench.corpus.chunking import passage_text

    work = {}
    for name, settings in config["encoders"].items():
        passages = []
        for chunks in sorted(results.glob("corpus/*/chunks.parquet")):
            if (chunks.parent / "embeddings" / f"{name}.npy").exists():
                passages += passage_text(pd.read_parquet(chunks, columns=["title", "text"]))
        questions = []
        for version in sorted(config["qsets"]):
            if (results / version / "query-embeddings" / f"{name}.npy").exists():
                questions += pd.read_parquet(results / version / "questions.parquet")["question"].tolist()
        work[name] = {"settings": settings, "passages": passages, "questions": questions}
    return work


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=REPO / "config" / "scifact.yaml")
    parser.add_argument("--without", nargs="*", default=["e5"], help="encoders left out (and their methods)")
    parser.add_argument("--cores", default="2")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rankbench-forward-floor"))
    args = parser.parse_args()
    config = without_encoders(yaml.safe_load(args.config.read_text()), set(args.without))
    dataset = config["dataset"]
    for key in ("path", "corpus", "lock"):
        if key in dataset and not Path(dataset[key]).is_absolute():
            dataset[key] = str((REPO / dataset[key]).resolve())
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    (args.workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    print(f"{args.config.name} without {', '.join(args.without) or 'nothing'}: methods "
          f"{', '.join(config['methods'])}; encoders {', '.join(config['encoders'])}", flush=True)
    run_wall, run_cpu = timed([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow" / "Snakefile"),
                               "--configfile", "config.yaml", "--cores", args.cores], args.workdir)
    print(f"workflow, cold: {run_wall:.1f} s wall, {run_cpu:.1f} CPU-s", flush=True)
    work = encoded_texts(args.workdir / "results" / dataset["name"], config)
    (args.workdir / "floor.json").write_text(json.dumps(work))
    floor_wall, floor_cpu = timed([sys.executable, "-c", FLOOR, "floor.json"], args.workdir)
    counts = "; ".join(f"{name}: {len(w['passages'])} passages, {len(w['questions'])} questions"
                       for name, w in work.items())
    print(f"floor, one process ({counts}): {floor_wall:.1f} s wall, {floor_cpu:.1f} CPU-s")
    print(f"the run is {run_cpu / floor_cpu:.2f}x its forward passes in CPU, {run_wall / floor_wall:.2f}x in wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
