"""What Linux's /proc says about the processes of a run: who is whose parent, who is still alive, what a process
group has spent, which threads a process has and what they are doing, who holds a file open. The job worker and
`rankbench run` read these to stop a run whole and to fork only when it is safe (execution/job_worker.py,
execution/run_lock.py). Off Linux every answer is empty."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a /proc stat file after the command name (state first: field 3 of proc(5)); None when the
    process is gone. The name is skipped by its closing parenthesis: it may hold spaces and parentheses."""
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def parent_of(pid: int) -> int | None:
    """The parent of pid; None when pid is gone."""
    fields = _stat_fields(PROC / str(pid) / "stat")
    return int(fields[1]) if fields else None


def alive(pid: int) -> bool:
    """Whether pid is a process that still runs (a zombie, ended but not yet collected, counts as ended)."""
    fields = _stat_fields(PROC / str(pid) / "stat")
    return fields is not None and fields[0] not in ("Z", "X")


def ancestors(pid: int) -> list[int]:
    """pid's parent, its parent's parent, ... up to the first process (nearest first)."""
    found: list[int] = []
    parent = parent_of(pid)
    while parent and parent not in found:
        found.append(parent)
        parent = parent_of(parent)
    return found


def _processes() -> Iterator[tuple[int, list[str]]]:
    """Every live process with its stat fields."""
    for entry in PROC.glob("[0-9]*"):
        fields = _stat_fields(entry / "stat")
        if fields is not None and fields[0] not in ("Z", "X"):
            yield int(entry.name), fields


def descendants(pid: int) -> list[int]:
    """The live processes started by pid, by those, and so on (children before their own children)."""
    children: dict[int, list[int]] = {}
    for child, fields in _processes():
        children.setdefault(int(fields[1]), []).append(child)
    found, queue = [], list(children.get(pid, []))
    while queue:
        child = queue.pop(0)
        found.append(child)
        queue.extend(children.get(child, []))
    return found


def group_cpu_ticks(group: int) -> int:
    """Clock ticks of CPU spent so far by the live processes of a process group, their collected children
    included (utime, stime, cutime, cstime)."""
    return sum(int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
               for _, fields in _processes() if int(fields[2]) == group)


def other_threads() -> list[tuple[int, str, str]]:
    """The threads of this process other than the calling one: (thread id, name, state letter of proc(5): R
    running, S sleeping, D waiting on a device, ...)."""
    own = threading.get_native_id()
    found = []
    for task in (PROC / "self" / "task").glob("[0-9]*"):
        if int(task.name) == own:
            continue
        fields = _stat_fields(task / "stat")
        try:
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        if fields is not None:
            found.append((int(task.name), name, fields[0]))
    return found


def holders(path: Path) -> list[int]:
    """The live processes that hold `path` open (an inherited descriptor counts), by /proc/<pid>/fd."""
    target = str(path.resolve())
    found = []
    for pid, _ in _processes():
        try:
            descriptors = list((PROC / str(pid) / "fd").iterdir())
        except OSError:  # gone, or another user's
            continue
        if any(_link(descriptor) == target for descriptor in descriptors):
            found.append(pid)
    return sorted(found)


def working_in(folder: Path, program: bytes) -> list[int]:
    """The live processes of this user whose working folder is `folder` and whose command names `program` among
    its first three words (`python -m snakemake ...`, `.venv/bin/snakemake ...`)."""
    target = str(folder.resolve())
    found = []
    for pid, _ in _processes():
        try:
            if os.readlink(PROC / str(pid) / "cwd") != target:
                continue
            command = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone, or another user's
            continue
        if any(part.endswith(program) for part in command[:3]):
            found.append(pid)
    return sorted(found)


def _link(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:  # closed meanwhile
        return None
