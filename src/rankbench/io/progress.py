"""Progress of a long job where users look: a tqdm bar on the terminal and, at every tenth of the work or every 10 s
(whichever comes first), a line in the job's log (`embed passages: 4,000/40,000 (10%), 59.1/s, ETA 0:10:09`),
written through `logging` (run_script sends it to the rule's log file; `rankbench run` shows the running job's last
line).

The ETA must not be optimistic when the work slows down: units may cost more as a job goes on (an encoder that
takes its texts shortest first: its first tenth went 3-4 times faster than the rest). So a job may count the `work`
its units weigh (the characters of the texts), and the ETA divides the work left by the slower of the overall rate
and the rate over the last RECENT of the work; the rate shown is that recent one, in units."""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")
LOG_STEPS = 10  # log lines per job: one at each tenth of the work
LOG_EVERY = 10.0  # seconds: a slow tenth still gets a line this often (at its next update)
BAR_FROM = 2000  # units of work: smaller jobs show no terminal bar (their log lines still come)
RECENT = 0.1  # the recent rate is measured over this share of the job's work (at least: from the update before)


def _clock_text(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class _NoBar:
    """Where tqdm is not installed (the light core), log lines only."""

    def update(self, count: int) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(total: int, desc: str, unit: str, show: bool) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=desc, unit=unit, disable=not show)


class Progress:
    """Counts done units of a job of `total` units (and, when given, the `work` they weigh: each update says how
    much of it its units were); logs a line each time another tenth is done, LOG_EVERY seconds after the last line,
    and at the end."""

    def __init__(self, total: int, desc: str, unit: str = "items", bar: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, work: float | None = None) -> None:
        self.total, self.desc, self.unit, self.clock = max(int(total), 0), desc, unit, clock
        self.work = float(self.total if work is None else work)
        self.done, self.worked, self.started, self.logged_steps = 0, 0.0, clock(), 0
        self.logged_at = self.started
        # (time, units done, work done): the start and each update since the last one RECENT of the work back
        self.marks: deque[tuple[float, int, float]] = deque([(self.started, 0, 0.0)])
        show = self.total >= BAR_FROM if bar is None else bar
        self.bar = _bar(self.total, desc, unit, show)

    def line(self) -> str:
        """done/total (percent), the recent rate and the ETA, as logged."""
        now = self.clock()
        elapsed = max(now - self.started, 1e-9)
        since, units, worked = self.marks[0]
        span = max(now - since, 1e-9)
        work_rate = min(self.worked / elapsed, (self.worked - worked) / span)
        percent = 100 * self.done / self.total if self.total else 100.0
        left = max(self.work - self.worked, 0.0)
        eta = "0:00:00" if left == 0 else _clock_text(left / work_rate) if work_rate > 0 else "?"
        return (f"{self.desc}: {self.done:,}/{self.total:,} {self.unit} ({percent:.0f}%), "
                f"{(self.done - units) / span:,.1f} {self.unit}/s, elapsed {_clock_text(elapsed)}, ETA {eta}")

    def update(self, count: int = 1, work: float | None = None) -> None:
        """Count `count` more units done, weighing `work` (default: one each)."""
        self.done += count
        self.worked += count if work is None else work
        self.bar.update(count)
        now = self.clock()
        self.marks.append((now, self.done, self.worked))
        while len(self.marks) > 2 and self.marks[1][2] <= self.worked - RECENT * self.work:
            self.marks.popleft()
        steps = LOG_STEPS if not self.total else min(LOG_STEPS, math.floor(LOG_STEPS * self.done / self.total))
        if steps > self.logged_steps or now - self.logged_at >= LOG_EVERY:
            self.logged_steps, self.logged_at = steps, now
            logging.info("%s", self.line())

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


def blocks(count: int, multiple: int = 1) -> list[range]:
    """Contiguous slices of `count` items, about one tenth each (a multiple of `multiple`): one log line each."""
    size = max(multiple, math.ceil(math.ceil(count / LOG_STEPS) / multiple) * multiple)
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


def tracked(items: Iterable[T], total: int, desc: str, unit: str = "items", bar: bool | None = None) -> Iterator[T]:
    """The items, each counted as one unit of a Progress."""
    with Progress(total, desc, unit, bar) as progress:
        for item in items:
            yield item
            progress.update()
