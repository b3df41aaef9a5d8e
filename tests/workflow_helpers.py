"""Run the real Snakefile on a copy of a dataset in a temporary folder, and read what it would do."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
# The shared datasets (BEIR format): $RANKBENCH_SHARED_DATASETS, else ../shared/datasets beside the repository.
SHARED_DATASETS = Path(os.environ.get("RANKBENCH_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


def shared_dataset(name: str) -> Path | None:
    """The folder of a shared dataset (it has a corpus.jsonl), or None when this machine has none: tests skip."""
    path = SHARED_DATASETS / name
    return path if (path / "corpus.jsonl").exists() else None
def demo_grain() -> str:
    """The grain the demo's config reports at (report.grain): its pages' tables, failures and explorer use it."""
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())["report"]["grain"]


SNAKEMAKE = [sys.executable, "-m", "snakemake"]
_JOB_LINE = re.compile(r"^(\w+)\s+(\d+)$")


def snakemake(workdir: Path, *args: str, configfile: str = "config.yaml") -> subprocess.CompletedProcess[str]:
    """Run the project's Snakefile in workdir with that folder's config file."""
    command = SNAKEMAKE + ["-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(workdir),
                           "--configfile", str(workdir / configfile), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


def planned_jobs(workdir: Path, configfile: str = "config.yaml") -> dict[str, int]:
    """Jobs a dry run schedules, by rule (empty when there is nothing to do)."""
    result = snakemake(workdir, "--dry-run", "--quiet", "rules", configfile=configfile)
    assert result.returncode == 0, result.stderr
    jobs = {}
    for line in result.stdout.splitlines():
        match = _JOB_LINE.match(line.strip())
        if match and match.group(1) != "total":
            jobs[match.group(1)] = int(match.group(2))
    return jobs


def copy_dataset(source_config: Path, folders: list[Path], workdir: Path) -> Path:
    """Copy the config (as config.yaml) and the data folders it reads into workdir."""
    for folder in folders:
        shutil.copytree(REPO / folder, workdir / folder)
    shutil.copy(REPO / source_config, workdir / "config.yaml")
    return workdir


def edit_config(workdir: Path, edit, name: str = "config.yaml") -> str:
    """Write an edited copy of workdir's config.yaml under `name`."""
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    edit(config)
    (workdir / name).write_text(yaml.safe_dump(config, sort_keys=False))
    return name


_LINK = re.compile(r'(?:href|src)="([^"]*)"')


def broken_links(results: Path) -> list[str]:
    """Every link and image of every HTML page under a results folder whose target does not exist (`page: target`);
    anchors within a page and links the explorer's script builds (`${...}`) are not files."""
    broken = []
    for page in sorted(results.rglob("*.html")):
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            path = target.split("#")[0].split("?")[0]
            if not path or "${" in target:
                continue
            assert "://" not in path and not path.startswith("/"), (page, target)  # nothing from the network
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(results)}: {target}")
    return broken


def vector_size_decisions(workdir: Path, dataset: str, qset: str, chunker: str, margin: float, grain: str,
                          k: int = 10) -> list:
    """The vector-size decisions of a finished run's tables (its metrics files and index size records) at this
    margin on nDCG@k: analysis/recommend_axes.vector_axes, the pure function the recommend rule calls."""
    import json

    from rankbench.analysis.recommend_axes import RunTables, per_question, vector_axes
    from rankbench.configuration.config import expand_methods
    from rankbench.configuration.defaults import method_settings
    from rankbench.retrieval.dense import IndexSpec, float_twins

    config = yaml.safe_load((workdir / "config.yaml").read_text())
    methods = {m: method_settings(spec) for m, spec in expand_methods(config["methods"], "config.yaml").items()}
    dense = {m: {**spec, "chunker": chunker} for m, spec in methods.items() if spec["type"] == "dense"}
    folder = workdir / "results" / dataset
    stats = {m: json.loads(next((folder / "corpus" / chunker / "faiss").glob(
        f"*/{IndexSpec.from_config(spec.get('index')).name}.json")).read_text()) for m, spec in dense.items()}
    settings = {"grain": grain, "headline": [("ndcg", k)], "ks": [k], "margins": {("ndcg", k): margin},
                "alpha": 0.05, "seed": 0, "resamples": 1000, "target": {}}
    tables = RunTables(per_question(sorted((folder / qset / "metrics").glob("*.parquet"))), methods, {}, {}, stats,
                       float_twins(dense), None, settings)
    return vector_axes(tables)


def cost_column(page: str, column: str) -> dict[str, str]:
    """method -> its cell under `column` in the first table of the cost page that has it (one row per method)."""
    for block in page.split("\n\n"):
        lines = [line for line in block.strip().splitlines() if line.startswith("| ")]
        header = [cell.strip() for cell in lines[0].strip("|").split("|")] if lines else []
        if header[:1] == ["method"] and column in header:
            cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:]]
            return {row[0]: row[header.index(column)] for row in cells if not set(row[0]) <= set("-:")}
    raise ValueError(f"no table of the cost page has a column {column!r}")


def serving_figures(page: str) -> dict[str, dict[str, float]]:
    """method -> MB in RAM, MB on disk and dimensions as the cost page shows them (NaN for –)."""
    columns = {name: cost_column(page, name) for name in ("MB in RAM", "MB on disk", "dimensions")}
    return {method: {name: float(values[method].replace(",", "").replace("–", "nan")) for name, values in
                     columns.items()} for method in columns["MB in RAM"]}
