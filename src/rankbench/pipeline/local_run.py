"""What a run on this machine sets up when it starts and takes down when it ends: the job worker that serves the
light jobs (pipeline/job_worker.py), and a scheduler that waits for jobs to end instead of polling. A cluster run
(an executor that submits jobs elsewhere) keeps Snakemake's own behaviour: every job its own process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rankbench.pipeline.job_worker import WORKER_VARIABLE, model_worker_address

# A Unix socket's path must fit in 108 bytes: a longer TMPDIR runs every job in its own process.
_SOCKET_PATH_LIMIT = 100
_workers: list[subprocess.Popen[bytes]] = []
_worker_folder: str | None = None


def start_local_run(workflow: Any, preload: Sequence[str] = ()) -> None:
    """At the start of a run that executes its jobs on this machine: stop the scheduler's polling, start the job
    worker, and the model worker with the `preload` modules loaded (the libraries of the run's encoders)."""
    settings = workflow.executor_plugin.common_settings
    if settings.non_local_exec or settings.dryrun_exec or settings.touch_exec:
        return
    stop_scheduler_polling(workflow)
    start_job_worker(preload)


def stop_scheduler_polling(workflow: Any) -> None:
    """Drop Snakemake's limit of job starts per second, which is for submitting to a cluster: it re-arms a 1-second
    re-evaluation at every scheduling pass, and those timers add up (one more chain per finished job), so the demo's
    162 jobs made about 10,800 passes, each checking every ready job's inputs: a fifth of the run's CPU. Jobs run
    here are limited by --cores alone; the scheduler wakes when one ends."""
    scheduler = getattr(workflow, "scheduler", None)
    if scheduler is not None and hasattr(scheduler, "job_rate_limiter"):
        scheduler.job_rate_limiter = None


def start_job_worker(preload: Sequence[str] = ()) -> None:
    """Start the worker of the light jobs and, when there are `preload` modules, the model worker that loads them
    meanwhile; point the run's jobs at them (they inherit this process's environment). Nothing when the user set
    RANKBENCH_JOB_WORKER=off, off Linux, or when the sockets' paths would be too long."""
    global _worker_folder
    # Linux only: macOS system libraries are not safe to use in a forked copy (Python's own pools spawn there)
    if os.environ.get(WORKER_VARIABLE) == "off" or _workers or not sys.platform.startswith("linux"):
        return
    folder = tempfile.mkdtemp(prefix="rankbench-worker-")  # private to this user (mode 0700)
    address = os.path.join(folder, "socket")
    if len(max(address, model_worker_address(address)).encode()) > _SOCKET_PATH_LIMIT:
        shutil.rmtree(folder, ignore_errors=True)
        return
    source = str(Path(__file__).resolve().parents[2])  # the folder holding the rankbench package
    python_path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    # OpenMP runtimes read their wait policy when loaded, here, not when a job sizes its threads: idle threads sleep
    # (pipeline/threads.py), or a preloaded encoder's pool would spin in every job
    env = {**os.environ, "PYTHONPATH": python_path, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    served = [(address, ())] + ([(model_worker_address(address), tuple(preload))] if preload else [])
    for socket_path, modules in served:
        command = [sys.executable, "-m", "rankbench.pipeline.job_worker", socket_path, str(os.getpid()), *modules]
        _workers.append(subprocess.Popen(command, stdin=subprocess.DEVNULL, env=env))
    _worker_folder = folder
    os.environ[WORKER_VARIABLE] = address


def stop_job_worker() -> None:
    """End the workers (after the run's last job) and remove their sockets."""
    global _worker_folder
    for worker in _workers:
        worker.terminate()
    for worker in _workers:
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    _workers.clear()
    if _worker_folder is not None:
        shutil.rmtree(_worker_folder, ignore_errors=True)
        if os.environ.get(WORKER_VARIABLE) == os.path.join(_worker_folder, "socket"):
            del os.environ[WORKER_VARIABLE]
    _worker_folder = None
