"""One `rankbench run` at a time in a project folder, and what a stopped run left cleared by the next one.

The run's lock is an flock on `.snakemake/rankbench-run.lock`, taken by `rankbench run` and inherited by Snakemake and
the job workers (and so by the jobs they fork): the kernel lets it go when the last process of the run has ended,
however each ended (kill -9 included). While it is held, another run is refused at once, naming the run's process,
without touching the first run's files (its log included). Once it is free, nothing of an earlier run is alive: the
locks Snakemake left when it was killed are then stale, and removed, instead of advising `--unlock` (which, while a
run goes on, would let two write the same files)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from rankbench.errors import InputError
from rankbench.execution.processes import alive, holders, working_in

LOCK_FILE = Path(".snakemake") / "rankbench-run.lock"
SNAKEMAKE_LOCKS = Path(".snakemake") / "locks"
# How long a run waits for the processes of a stopped run to end (they end within seconds of their run's process).
ENDING_RUN_SECONDS = 20.0


def hold_run_lock(folder: Path, waiting: str = "") -> int:
    """Take the run lock of the project in `folder`; its open descriptor (pass it to the run's processes, close it
    at the end). Refused, with the other run's process id, while another run of the project is alive; while only
    the last processes of a stopped run are ending, wait for them (up to ENDING_RUN_SECONDS)."""
    path = folder / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + ENDING_RUN_SECONDS
    told = False
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            owner = _recorded_owner(descriptor)
            if owner is not None and alive(owner):
                os.close(descriptor)
                raise InputError(folder, None, f"another `rankbench run` of this project is running (PID {owner})",
                                 f"Wait for it to end, or stop it (kill {owner}), then run again.") from None
            remaining = [pid for pid in holders(path) if pid != os.getpid()]
            if time.monotonic() > deadline:
                os.close(descriptor)
                listed = " ".join(map(str, remaining))
                raise InputError(folder, None, f"processes of a stopped run of this project are still alive (PID "
                                 f"{listed})", f"End them (kill {listed}), then run again.") from None
            if not told and waiting:
                print(f"{waiting}: waiting for the processes of a stopped run to end (PID "
                      f"{' '.join(map(str, remaining))})", flush=True)
                told = True
            time.sleep(0.2)
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    return descriptor


def clear_stale_snakemake_locks(folder: Path) -> bool:
    """Remove the locks a killed Snakemake left in `folder`, once the run lock is held (no run of rankbench's is
    alive); refused, with its process id, while a Snakemake process started otherwise works in the folder. Whether
    there were any."""
    locks = sorted((folder / SNAKEMAKE_LOCKS).glob("*.lock"))
    if not locks:
        return False
    working = working_in(folder, b"snakemake")  # Snakemake works in its --directory
    if working:
        raise InputError(folder, None, f"a Snakemake run works in this folder (PID {working[0]}) and holds its locks",
                         f"Wait for it to end, or stop it (kill {working[0]}), then run again.")
    for lock in locks:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
    return True


def _recorded_owner(descriptor: int) -> int | None:
    """The process id the holder of the lock wrote in it (its `rankbench run`)."""
    try:
        recorded = os.pread(descriptor, 32, 0).decode().strip()
    except OSError:
        return None
    return int(recorded) if recorded.isdigit() else None
