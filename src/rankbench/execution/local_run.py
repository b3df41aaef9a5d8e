"""What a run on this machine sets up when it starts and takes down when it ends: the job worker that serves the
light jobs (execution/job_worker.py), Snakemake handing those jobs to it straight from its own process, and a
scheduler that waits for jobs to end instead of polling. A cluster run (an executor that submits jobs elsewhere)
keeps Snakemake's own behaviour: every job its own process."""

from __future__ import annotations

import contextlib
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
    LIGHT_WORKER,
    MODEL_WORKER_LIBRARIES,
    WORKER_FOLDER_PREFIX,
    WORKER_VARIABLE,
    WORKERS,
    Launched,
    declare_workers,
    launch,
    model_worker_address,
    running_jobs,
    serves_this_process,
)
from rankbench.execution.processes import alive, ancestors, descendants
from rankbench.execution.snakemake_adapter import (
    CHECKED_VERSIONS,
    ScriptJob,
    launch_python_scripts_with,
    rule_script_path,
    runs_jobs_here,
    stop_scheduler_polling,
    unchecked_version,
)

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
# Snakemake's process, once the `rankbench run` that started it is gone: how often it looks, and how long it then has to
# stop as on Ctrl-C before it is killed (nobody waits for it; the next run recovers what it left).
_LAUNCHER_POLL_SECONDS = 0.2
_ORPHAN_GRACE_SECONDS = 5.0
# The PID of the `rankbench run` that started Snakemake, in Snakemake's environment only (see end_with_launcher).
LAUNCHER_VARIABLE = "RANKBENCH_RUN_PID"
# A worker folder with no worker listening in it, this old, is left from a run killed with its workers.
_STALE_FOLDER_SECONDS = 60.0
# The scripts whose rules declared a worker (in_worker), by real path: which worker.
_declared: dict[str, str] = {}


def start_local_run(workflow: Any, preload: Sequence[str] = ()) -> None:
    """At the start of a run that executes its jobs on this machine: stop the scheduler's polling, start the job
    worker, and the model worker with the `preload` modules loaded (the libraries of the run's encoders), and have
    Snakemake hand the scripts whose rules declared a worker (in_worker) to them. On a Snakemake the job worker was not
    checked against (execution/snakemake_adapter.py), none of this: every job runs in its own process, and the run's
    output says so once."""
    version = unchecked_version()
    if version is not None:
        print(f"rankbench: warning: the job worker was not checked with Snakemake {version} (only with "
              f"{', '.join(CHECKED_VERSIONS)}): every job runs in a process of its own", file=sys.stderr, flush=True)
        os.environ[WORKER_VARIABLE] = "off"  # the jobs' own hand_over too (a worker `rankbench run` started idles)
        return
    if not runs_jobs_here(workflow):
        if os.environ.get(WORKER_VARIABLE, "off") != "off":  # one `rankbench run` started: not for cluster jobs
            del os.environ[WORKER_VARIABLE]
        return
    stop_scheduler_polling(workflow)
    stop_jobs_on_interrupt()
    start_job_worker(preload)
    address = os.environ.get(WORKER_VARIABLE, "off")
    if address != "off":
        declare_workers(address, _declared)
        launch_python_scripts_with(_launch_script_job)


def declare_script_worker(workflow: Any, script: str, worker: str = LIGHT_WORKER) -> str:
    """A rule's declaration that a local run's job worker serves its script (`script: in_worker("x.py")` in the
    rules, through workflow/rules/common.smk), the light jobs' one or, for a script that loads encoder or reranker
    models, `worker="model"`: the model worker, when the run has one and the job's encoder needs it
    (job_worker.needs_model_worker). The script's path, unchanged: Snakemake reads the rule as before. A script no
    rule declares runs in its own process; one that talks to a library starting threads when imported (a database
    client, a JVM) must not be declared."""
    if worker not in WORKERS:
        raise ValueError(f"in_worker({script!r}, worker={worker!r}): the worker is one of {', '.join(WORKERS)}")
    path = rule_script_path(workflow, script)
    if path is not None and _declared.setdefault(path, worker) != worker:
        raise ValueError(f"{path} is declared for the {_declared[path]} worker by one rule and the {worker} worker "
                         "by another: declare one")
    return script


def _launch_script_job(job: ScriptJob) -> Launched | None:
    """Hand a Snakemake script job to the worker its rule declared, from the Snakemake thread that runs it, as its
    own process would have run Snakemake's copy of the script (`fname`), and the job's CPU and memory then fill its
    benchmark record (snakemake_adapter). None, having done nothing, for a script no rule declared, a job that must
    keep its own process (a conda, container or module environment, not local), or no worker taking it. This saves
    the job a Python process that only hands itself over (~0.11 CPU-s and ~0.1 s at every job)."""
    worker = _declared.get(job.script)
    if worker is None or not job.plain:
        return None
    return launch(worker, job.script, job.snakemake, cwd=os.getcwd(),
                  env=job_environment(os.environ, job.threads, job.resources),
                  path=[os.path.dirname(job.script), *sys.path], argv=[job.fname],
                  usage_note="its benchmark file records the same")


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


def end_with_launcher() -> None:
    """In Snakemake's process, as its Snakefile is read: when the `rankbench run` that started it (LAUNCHER_VARIABLE)
    is gone (killed, kill -9 included), end the run's jobs, stop Snakemake as on Ctrl-C, and kill it
    _ORPHAN_GRACE_SECONDS later if it is still there. The SIGINT the kernel sends it at that moment (launch.py) is not
    enough alone: Snakemake loses a KeyboardInterrupt raised while it writes a log line (its log handler ignores it)
    and then runs the whole workflow with nobody watching. Once per process (a study reads the Snakefile again); the
    variable is removed, so that nothing Snakemake starts takes it for its own."""
    launcher = os.environ.pop(LAUNCHER_VARIABLE, None)
    if launcher is None or not launcher.isdigit() or not sys.platform.startswith("linux"):
        return
    threading.Thread(target=_end_when_gone, args=(int(launcher),), name="rankbench-launcher", daemon=True).start()


def _end_when_gone(launcher: int) -> None:
    while os.getppid() == launcher:
        time.sleep(_LAUNCHER_POLL_SECONDS)
    end_jobs()
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(_ORPHAN_GRACE_SECONDS)
    os.kill(os.getpid(), signal.SIGKILL)


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


def job_environment(environment: Mapping[str, str], threads: int, resources: Mapping[str, Any]) -> dict[str, str]:
    """The environment Snakemake's shell gives a job: the run's, with the job's thread count for the numeric
    libraries and its tmpdir resource as the temporary folder."""
    job = {**environment, **dict.fromkeys(_THREAD_VARIABLES, str(threads))}
    tmpdir = resources.get("tmpdir")
    if tmpdir:
        job.update(dict.fromkeys(_TMPDIR_VARIABLES, str(tmpdir)))
    return job

