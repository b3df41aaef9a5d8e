"""What `rankbench run` shows while Snakemake works: jobs done/total, the running step and the last progress line of
its log (encoders and indexes write one at every tenth of their work or every 10 s, io/progress.py), read from
Snakemake's own output, which goes whole to a log file. On a terminal it is one line, rewritten; elsewhere (CI, a
pipe) a line when a step starts and when its progress moves, each naming its job (two jobs may run at once).

Every warning of a run is shown too, naming its job, once however often it comes: a job's warnings are read from
its log (run_script writes `time WARNING message` lines there and to Snakemake's output), and a warning line of
Snakemake's output that no job's log holds (a job without a log file) is shown with the job that was running alone
when it came, if one was. `finish` reads what the jobs wrote last; `warning_lines` repeats them all at the end."""

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
# A warning, as logging writes it in a job (execution/scripting.py's format: time, level, message; a Python warning
# caught by logging.captureWarnings is one too), as Python prints an uncaught one (`file:line: XWarning: text`), or as
# rankbench's own processes print one (`rankbench: warning: text`: the job worker names a job that uses no CPU).
_WARNING = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ WARNING (.+)$")
_PYTHON_WARNING = re.compile(r"^\S+:\d+: (\w*Warning: .+)$")
_RANKBENCH_WARNING = re.compile(r"^rankbench: warning: (.+)$")
TAIL_LINES = 15  # of Snakemake's output, shown when a run fails before any job (a config or input error)


@dataclass
class _Job:
    rule: str
    log: Path | None = None
    wildcards: str = ""
    progress: str = ""
    read_to: int = 0  # how far its log was read for warnings (bytes)


@dataclass(frozen=True)
class RunWarning:
    """A warning of the run: the job that gave it (its rule and wildcards; '' when no job can be named) and its
    first line."""

    job: str
    message: str


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
    warnings: list[RunWarning] = field(default_factory=list)
    _block: _Job | None = None
    _shown: str = ""
    _loose: list[tuple[str, str]] = field(default_factory=list)  # (job running alone or '', message)

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
            finished = self.running.pop(match.group(1), None)
            if finished is not None:
                self._read_warnings(finished)
        elif match := _WARNING.match(line) or _PYTHON_WARNING.match(line) or _RANKBENCH_WARNING.match(line):
            alone = list(self.running.values())
            self._loose.append((_name(alone[0]) if len(alone) == 1 else "", match.group(1)))
        elif match := _STEPS.match(line):
            self.done, self.total = int(match.group(1)), int(match.group(2))
            self._show()
        elif (match := _TOTAL.match(line)) and self.total is None:
            self.total = int(match.group(1))

    def poll(self) -> None:
        """Read each running job's last progress line and new warnings from its log; show what moved, and the
        warnings of Snakemake's output read before that no job's log holds."""
        loose, self._loose = self._loose, []
        for job in list(self.running.values()):
            self._read_warnings(job)
            latest = _last_progress(job.log)
            if latest and latest != job.progress:
                job.progress = latest
                if not self.terminal:
                    self._print(f"  {_name(job)}: {latest}")
        self._settle(loose)
        self._show()

    def finish(self) -> None:
        """After Snakemake ended: the warnings the jobs wrote last (the running and failed jobs' logs) and those of
        Snakemake's output no log holds."""
        for job in [*self.running.values(), *self.failed]:
            self._read_warnings(job)
        loose, self._loose = self._loose, []
        self._settle(loose)
        self.close()

    def warning_lines(self) -> list[str]:
        """Every warning of the run once, naming the jobs that gave it: `warning: job, job: message`."""
        jobs: dict[str, list[str]] = {}
        for warning in self.warnings:
            jobs.setdefault(warning.message, [])
            if warning.job and warning.job not in jobs[warning.message]:
                jobs[warning.message].append(warning.job)
        return [f"warning: {', '.join(names)}: {message}" if names else f"warning: {message}"
                for message, names in jobs.items()]

    def warning_count(self) -> str:
        """`N warning(s)` of the run ('' when none)."""
        count = len(self.warning_lines())
        return f"{count} warning{'s' if count > 1 else ''}" if count else ""

    def status(self) -> str:
        """`[done/total jobs, N warnings] rule (wildcards): its last progress line`, of the job started last."""
        count = f"[{self.done}/{self.total if self.total is not None else '?'} jobs" + (
            f", {self.warning_count()}]" if self.warnings else "]")
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

    def _read_warnings(self, job: _Job) -> None:
        """The warnings a job's log gained since it was last read (whole lines only)."""
        if job.log is None or not job.log.is_file():
            return
        with open(job.log, "rb") as handle:
            handle.seek(job.read_to)
            text = handle.read()
        complete = text.rfind(b"\n") + 1
        job.read_to += complete
        for line in text[:complete].decode("utf-8", errors="replace").splitlines():
            if match := _WARNING.match(line) or _PYTHON_WARNING.match(line):
                self._warn(RunWarning(_name(job), match.group(1)))

    def _settle(self, loose: list[tuple[str, str]]) -> None:
        """Warnings of Snakemake's output: those a job's log held are shown already; the others now."""
        known = {warning.message for warning in self.warnings}
        for job, message in loose:
            if message not in known:
                self._warn(RunWarning(job, message))

    def _warn(self, warning: RunWarning) -> None:
        if warning in self.warnings:
            return
        self.warnings.append(warning)
        text = f"warning: {warning.job}: {warning.message}" if warning.job else f"warning: {warning.message}"
        if self.terminal and self._shown:  # above the rewritten line, which is drawn again below it
            self.out.write("\r" + " " * len(self._shown) + "\r")
            self._shown = ""
        self._print(text)
        self._show()

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


