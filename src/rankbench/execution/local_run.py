"""What a run on this machine sets up when it starts and takes down when it ends: the job worker that serves the
light jobs (execution/job_worker.py), Snakemake handing those jobs to it straight from its own process, and a
scheduler that waits for jobs to end instead of polling. A cluster run (an executor that submits jobs elsewhere)
keeps Snakemake's own behaviour: every job its own process."""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from rankbench.execution.job_worker import (
    MODEL_WORKER_LIBRARIES,
    WORKER_FOLDER_PREFIX,
    WORKER_VARIABLE,
    model_worker_address,
    needs_model_worker,
    record_usage,
    run_in_worker,
    running_jobs,
    serves_this_process,
    worker_connection,
)
from rankbench.execution.processes import alive, ancestors, descendants

# A Unix socket's path must fit in 108 bytes: a longer TMPDIR runs every job in its own process.
_SOCKET_PATH_LIMIT = 100
# How long the run waits for its workers' sockets (a worker is listening ~0.05 s after it starts).
_WORKER_START_SECONDS = 10.0
_workers: list[subprocess.Popen[bytes]] = []
_worker_folder: str | None = None
# What Snakemake's shell sets in a job's environment from its threads (snakemake/shell.py), and from its tmpdir.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_TMPDIR_VARIABLES = ("TMPDIR", "TMP", "TEMPDIR", "TEMP")
# After Ctrl-C (or its run's end), how long the run's jobs have to end on SIGTERM before they are killed, and how long
# Snakemake then has to remove their incomplete outputs and its locks before it is killed too.
_JOB_GRACE_SECONDS = 3.0
_SNAKEMAKE_GRACE_SECONDS = 30.0
# A worker folder with no worker listening in it, this old, is left from a run killed with its workers.
_STALE_FOLDER_SECONDS = 60.0


def start_local_run(workflow: Any, preload: Sequence[str] = ()) -> None:
    """At the start of a run that executes its jobs on this machine: stop the scheduler's polling, start the job
    worker, and the model worker with the `preload` modules loaded (the libraries of the run's encoders)."""
    settings = workflow.executor_plugin.common_settings
    if settings.non_local_exec or settings.dryrun_exec or settings.touch_exec:
        if os.environ.get(WORKER_VARIABLE, "off") != "off":  # one `rankbench run` started: not for cluster jobs
            del os.environ[WORKER_VARIABLE]
        return
    stop_scheduler_polling(workflow)
    stop_jobs_on_interrupt()
    start_job_worker(preload)
    if os.environ.get(WORKER_VARIABLE, "off") != "off":
        launch_scripts_in_worker()


def stop_scheduler_polling(workflow: Any) -> None:
    """Drop Snakemake's limit of job starts per second, which is for submitting to a cluster: it re-arms a 1-second
    re-evaluation at every scheduling pass, and those timers add up (one more chain per finished job), so the demo's
    162 jobs made about 10,800 passes, each checking every ready job's inputs: a fifth of the run's CPU. Jobs run
    here are limited by --cores alone; the scheduler wakes when one ends."""
    scheduler = getattr(workflow, "scheduler", None)
    if scheduler is not None and hasattr(scheduler, "job_rate_limiter"):
        scheduler.job_rate_limiter = None


def stop_jobs_on_interrupt() -> None:
    """Make Ctrl-C (SIGINT: the user's, or the one `rankbench run` leaves Snakemake when it dies) and SIGTERM end the
    run's jobs at once, and Snakemake then stop as on Ctrl-C (removing their incomplete outputs): Snakemake itself
    only waits for running jobs (for SIGTERM, it even lets them finish), and neither a job running in a worker nor a
    subprocess of a job hears the signal when Snakemake runs in a session of its own. Should Snakemake hang, it is
    ended after _SNAKEMAKE_GRACE_SECONDS. In Snakemake's main thread only (after its scheduler set its own SIGTERM)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupted(signal_number: int, frame: Any) -> None:
        end_jobs()
        last_resort = threading.Timer(_SNAKEMAKE_GRACE_SECONDS, os.kill, (os.getpid(), signal.SIGKILL))
        last_resort.daemon = True  # Snakemake's exit does not wait for it
        last_resort.start()
        signal.default_int_handler(signal_number, frame)

    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, interrupted)


def end_jobs() -> None:
    """Send SIGTERM to the jobs this process runs (in a worker, or as its subprocesses, with theirs), and SIGKILL to
    those still alive _JOB_GRACE_SECONDS later. The job workers, when this process started them, stay: they end with
    the run."""
    workers = {worker.pid for worker in _workers}
    groups = running_jobs()
    processes = [pid for pid in descendants(os.getpid()) if not workers.intersection([pid, *ancestors(pid)])]
    for pid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGTERM)
    for pid in processes:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)

    def kill_the_rest() -> None:
        for pid in groups:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        for pid in processes:
            if alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    timer = threading.Timer(_JOB_GRACE_SECONDS, kill_the_rest)
    timer.daemon = True
    timer.start()


def start_job_worker(preload: Sequence[str] = (), output: TextIO | None = None, keep_fds: Sequence[int] = ()) -> None:
    """Start the worker of the light jobs and, when there are `preload` modules, the model worker that loads them
    meanwhile; point the run's jobs at them (they inherit this process's environment). Nothing when the user set
    RANKBENCH_JOB_WORKER=off, off Linux, when the sockets' paths would be too long, or when a worker of this run
    already serves (`rankbench run` starts them before Snakemake, which takes them over). The workers inherit
    `keep_fds` (the run's lock: execution/run_lock.py)."""
    global _worker_folder
    # Linux only: macOS system libraries are not safe to use in a forked copy (Python's own pools spawn there)
    if os.environ.get(WORKER_VARIABLE) == "off" or _workers or not sys.platform.startswith("linux"):
        return
    if serves_this_process(os.environ.get(WORKER_VARIABLE, "")):  # not one inherited from another run
        return
    remove_stale_worker_folders()
    folder = tempfile.mkdtemp(prefix=WORKER_FOLDER_PREFIX)  # private to this user (mode 0700)
    address = os.path.join(folder, "socket")
    if len(max(address, model_worker_address(address)).encode()) > _SOCKET_PATH_LIMIT:
        shutil.rmtree(folder, ignore_errors=True)
        return
    source = str(Path(__file__).resolve().parents[2])  # the folder holding the rankbench package
    python_path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    # OpenMP runtimes read their wait policy when loaded, here, not when a job sizes its threads: idle threads sleep
    # (execution/threads.py), or a preloaded encoder's pool would spin in every job
    env = {**os.environ, "PYTHONPATH": python_path, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    served = [(address, ())] + ([(model_worker_address(address), tuple(preload))] if preload else [])
    for socket_path, modules in served:
        command = [sys.executable, "-m", "rankbench.execution.job_worker", socket_path, str(os.getpid()), *modules]
        _workers.append(subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=env,
                                         pass_fds=tuple(keep_fds)))
    _worker_folder = folder
    # The first jobs start as soon as this returns; Snakemake hands them over itself, so the sockets must be there
    deadline = time.monotonic() + _WORKER_START_SECONDS
    while not all(os.path.exists(socket_path) for socket_path, _ in served):
        if time.monotonic() > deadline or any(worker.poll() is not None for worker in _workers):
            break  # jobs then run in their own processes (hand_over finds no worker)
        time.sleep(0.005)
    os.environ[WORKER_VARIABLE] = address


def remove_stale_worker_folders(older_than: float = _STALE_FOLDER_SECONDS) -> list[Path]:
    """Remove this user's worker folders in the temporary folder that no worker listens in any more (left when a
    worker and its run were both killed at once), once older than `older_than` seconds (a starting run's worker
    opens its socket within seconds); those removed."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{WORKER_FOLDER_PREFIX}*"):
        try:
            if folder.stat().st_uid != os.getuid() or time.time() - folder.stat().st_mtime < older_than:
                continue
        except OSError:
            continue
        if not any(_listening(socket_path) for socket_path in folder.iterdir()):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _listening(address: Path) -> bool:
    """Whether a process accepts connections on the Unix socket at `address`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(address))
        except OSError:
            return False
    return True


def model_libraries(config: Mapping[str, Any]) -> list[str]:
    """What a run of this config's model worker loads at its start: the slow libraries of its encoders."""
    from rankbench.retrieval.encoders.kinds import encoder_kind

    return sorted({library for settings in (config.get("encoders") or {}).values()
                   for library in encoder_kind(settings).modules if library in MODEL_WORKER_LIBRARIES})


def end_local_run() -> None:
    """At the end of a run (Snakemake's onsuccess and onerror): end the workers, and leave every object loaded so far
    out of garbage collection, so that the interpreter's teardown does not walk them all (~0.3 s after the last job
    of every run, on the quick run's critical path)."""
    stop_job_worker()
    gc.freeze()


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


def launch_scripts_in_worker() -> None:
    """Have Snakemake's own process hand the scripts that hand over (`hand_over(snakemake, __file__)`) to the job
    worker, instead of starting a Python process for each that only hands itself over (~0.11 CPU-s and ~0.1 s before
    the job starts, at every job). Snakemake runs a local run's script jobs in threads of its process; this wraps its
    Python script runner (snakemake.script.PythonScript, Snakemake 9), which still runs every other script (and these
    ones, when no worker answers) as before. The job's benchmark record then holds the job's own CPU time and peak
    memory."""
    from snakemake.script import PythonScript

    run_in_own_process = PythonScript.execute_script
    if getattr(run_in_own_process, "launches_in_worker", False):
        return

    def execute_script(script_job: Any, fname: str, edit: bool = False) -> None:
        if edit or not _launched_in_worker(script_job, fname):
            run_in_own_process(script_job, fname, edit=edit)

    execute_script.launches_in_worker = True  # type: ignore[attr-defined]
    PythonScript.execute_script = execute_script


def _launched_in_worker(script_job: Any, fname: str) -> bool:
    """Run a Snakemake script job (snakemake.script.PythonScript) in the run's worker, as its own process would have
    run it from the file `fname`, and fill its benchmark record; False, having done nothing, when it cannot be: not a
    script that hands over, a script in a conda or container environment, or no worker answering."""
    from snakemake.exceptions import WorkflowError
    from snakemake.iocontainers import Snakemake

    if script_job.conda_env or script_job.container_img or script_job.env_modules or not script_job.is_local:
        return False
    models = hand_over_models(script_job.source)
    if models is None:
        return False
    snakemake = Snakemake(script_job.input, script_job.output, script_job.params, script_job.wildcards,
                          script_job.threads, script_job.resources, script_job.log, script_job.config,
                          script_job.rulename, script_job.bench_iteration,
                          script_job.path.get_basedir().get_path_or_uri(secret_free=True))
    connection = worker_connection(os.environ.get(WORKER_VARIABLE, ""), models and needs_model_worker(snakemake))
    if connection is None:
        return False
    script = os.path.realpath(script_job.path.get_path_or_uri(secret_free=True))
    started = time.time()
    end = run_in_worker(connection, script, snakemake, cwd=os.getcwd(),
                        env=job_environment(os.environ, script_job.threads, script_job.resources),
                        path=[os.path.dirname(script), *sys.path], argv=[fname])
    if end is None:  # the worker would not fork it (execution/job_worker.py: when a fork is safe)
        return False
    if end.status is None:
        raise WorkflowError(f"rankbench: {end.failure()}")
    if script_job.bench_record is not None:
        _fill_benchmark(script_job.bench_record, time.time() - started, end.cpu_seconds, end.peak_kb)
    if script_job.log:
        record_usage(script_job.log[0], end.cpu_seconds, end.peak_kb, "its benchmark file records the same")
    if end.status != 0:  # the error its own process gave: raised in Snakemake's shell, so no frame of ours is shown
        if end.failure() and end.status < 0:
            print(f"rankbench: {end.failure()}", file=sys.stderr, flush=True)
        code = end.status if end.status > 0 else 128 - end.status
        script_job._execute_cmd(": {fname:q}; exit {code}", fname=fname, code=code)
    return True


@functools.lru_cache(maxsize=256)
def hand_over_models(source: str) -> bool | None:
    """Whether a script hands over to the model worker (True) or the light jobs' (False), read off its top-level
    `hand_over(snakemake, __file__, models=...)` call; None for a script that does not hand over."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "hand_over":
            models = next((keyword.value for keyword in call.keywords if keyword.arg == "models"), None)
            return isinstance(models, ast.Constant) and models.value is True
    return None


def job_environment(environment: Mapping[str, str], threads: int, resources: Mapping[str, Any]) -> dict[str, str]:
    """The environment Snakemake's shell gives a job: the run's, with the job's thread count for the numeric
    libraries and its tmpdir resource as the temporary folder."""
    job = {**environment, **dict.fromkeys(_THREAD_VARIABLES, str(threads))}
    tmpdir = resources.get("tmpdir")
    if tmpdir:
        job.update(dict.fromkeys(_TMPDIR_VARIABLES, str(tmpdir)))
    return job


def _fill_benchmark(record: Any, seconds: float, cpu_seconds: float, peak_kb: int) -> None:
    """What the worker measured of a job, in its Snakemake benchmark record (the rest stays NA)."""
    record.running_time = seconds
    record.cpu_time = record.cpu_usage = cpu_seconds
    record.max_rss = round(peak_kb / 1024, 2)
    record.max_vms = record.max_uss = record.max_pss = record.io_in = record.io_out = "NA"
    record.data_collected = True
