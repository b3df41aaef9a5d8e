"""What `rankbench run` shows while Snakemake works: jobs done/total, the running step and the last progress line of
its log (encoders and indexes write one at every tenth of their work or every 10 s, io/progress.py), read from
Snakemake's own output, which goes whole to a log file. On a terminal it is one line, rewritten; elsewhere (CI, a
pipe) a line when a step starts and when its progress moves."""

from __future__ import annotations

import re
import shutil
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

_RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")
_FIELD = re.compile(r"^\s+(jobid|log|wildcards): (.*)$")
_FIELD_LINE = re.compile(r"^\s+\w+: ")  # any field of a job block (input, output, reason, ...)
_FINISHED = re.compile(r"^Finished job(?:id)?:? (\d+)")
_STEPS = re.compile(r"^(\d+) of (\d+) steps \(\d+%\) done")
_TOTAL = re.compile(r"^total\s+(\d+)$")
_ERROR = re.compile(r"^Error in rule (\S+):")
# A progress line of a job's log (io/progress.py's Progress.line), after logging's time and level.
_PROGRESS = re.compile(r"INFO (.+: [\d,]+/[\d,]+ .+ETA .+)$")
_START_ERROR = re.compile(r'^\w+ in file ".+", line \d+:$')
TAIL_LINES = 15  # of Snakemake's output, shown when a run fails before any job (a config or input error)


@dataclass
class _Job:
    rule: str
    log: Path | None = None
    wildcards: str = ""
    progress: str = ""


@dataclass
class RunView:
    """Reads Snakemake's output line by line (`feed`) and the running jobs' logs (`poll`), and shows the run on
    `out`; `folder` is the project folder the jobs' log paths start from."""

    out: TextIO
    folder: Path
    terminal: bool
    done: int = 0
    total: int | None = None
    failed: list[_Job] = field(default_factory=list)
    running: dict[str, _Job] = field(default_factory=dict)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    _block: _Job | None = None
    _shown: str = ""

    def feed(self, line: str) -> None:
        """One line of Snakemake's output."""
        line = line.rstrip("\n")
        self.tail.append(line)
        field_line = _FIELD_LINE.match(line)
        if self._block is not None and not field_line:  # a job block ends: its fields are all read
            if self._block not in self.failed:
                self._say_started(self._block)
            self._block = None
        if match := _RULE.match(line):
            self._block = _Job(match.group(1))
        elif match := _ERROR.match(line):
            self._block = _Job(match.group(1))
            self.failed.append(self._block)
        elif self._block is not None and (match := _FIELD.match(line)):
            key, value = match.groups()
            if key == "log":
                self._block.log = self.folder / value.split(" (")[0].split(", ")[0]
            elif key == "wildcards":
                self._block.wildcards = value
            elif self._block in self.failed:
                self.running.pop(value, None)
            else:
                self.running[value] = self._block
        elif match := _FINISHED.match(line):
            self.running.pop(match.group(1), None)
        elif match := _STEPS.match(line):
            self.done, self.total = int(match.group(1)), int(match.group(2))
            self._show()
        elif (match := _TOTAL.match(line)) and self.total is None:
            self.total = int(match.group(1))

    def poll(self) -> None:
        """Read each running job's last progress line from its log; show what moved."""
        for job in self.running.values():
            latest = _last_progress(job.log)
            if latest and latest != job.progress:
                job.progress = latest
                if not self.terminal:
                    self._print(f"  {latest}")
        self._show()

    def status(self) -> str:
        """`[done/total jobs] rule (wildcards): its last progress line`, of the job started last."""
        count = f"[{self.done}/{self.total if self.total is not None else '?'} jobs]"
        if not self.running:
            return count
        job = list(self.running.values())[-1]
        return " ".join(filter(None, [count, _name(job) + (":" if job.progress else ""), job.progress]))

    def close(self) -> None:
        """End the rewritten line, if any."""
        if self.terminal and self._shown:
            self.out.write("\n")
            self.out.flush()
            self._shown = ""

    def failure_lines(self, lines: int = 5) -> list[str]:
        """What to show when the run failed: each failed job with the last lines of its log (its rankbench error
        paragraph), or, when no job failed, the error that stopped the workflow at start (a config or input error:
        its message without Snakemake's stack), else Snakemake's last lines."""
        if not self.failed:
            return _start_error(list(self.tail))
        shown = []
        for job in self.failed:
            shown.append(f"failed: {_name(job)}" + (f" (log: {job.log})" if job.log else ""))
            if job.log is not None and job.log.is_file():
                shown += ["  " + text for text in
                          job.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]]
        return shown

    def _say_started(self, job: _Job) -> None:
        if not self.terminal:
            self._print(f"[{self.done}/{self.total if self.total is not None else '?'} jobs] {_name(job)}")
        self._show()

    def _show(self) -> None:
        if not self.terminal or (self.total is None and not self.running):  # Snakemake is still planning
            return
        width = max(shutil.get_terminal_size((100, 20)).columns - 1, 20)
        text = self.status()[:width]
        if text != self._shown:
            self.out.write("\r" + text.ljust(len(self._shown)))
            self.out.flush()
            self._shown = text

    def _print(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


def _start_error(lines: list[str]) -> list[str]:
    """The message of the last `XError in file "...", line N:` in Snakemake's output, up to its stack; else the
    lines as they are."""
    starts = [number for number, line in enumerate(lines) if _START_ERROR.match(line)]
    if not starts:
        return lines
    message = []
    for line in lines[starts[-1] + 1:]:
        if line.startswith('  File "'):
            break
        message.append(line)
    return [f"rankbench: {' '.join(message).strip()}"] if message else lines


def _name(job: _Job) -> str:
    return f"{job.rule} ({job.wildcards})" if job.wildcards else job.rule


def _last_progress(log: Path | None) -> str:
    """The last progress line of a job's log ('' when it has none yet), from its last 4 KiB."""
    if log is None or not log.is_file():
        return ""
    with open(log, "rb") as handle:
        handle.seek(max(log.stat().st_size - 4096, 0))
        lines = handle.read().decode("utf-8", errors="replace").splitlines()
    return next((match.group(1) for line in reversed(lines) if (match := _PROGRESS.search(line))), "")


