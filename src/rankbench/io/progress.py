"""Progress of a long job where users look: a tqdm bar on the terminal and, at every tenth of the work or every 10 s
(whichever comes first), a line in the job's log (`embed passages: 4,000/40,000 (10%), 59.1/s, ETA 0:10:09`),
written through `logging` (run_script sends it to the rule's log file; `rankbench run` shows the running job's last
line)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")
LOG_STEPS = 10  # log lines per job: one at each tenth of the work
LOG_EVERY = 10.0  # seconds: a slow tenth still gets a line this often (at its next update)
BAR_FROM = 2000  # units of work: smaller jobs show no terminal bar (their log lines still come)


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
    """Counts done units of a job of `total` units; logs a line each time another tenth is done, LOG_EVERY seconds
after the last line, and at the end."""

    def __init__(self, total: int, desc: str, unit: str = "items", bar: bool | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.desc, self.unit, self.clock = max(int(total), 0), desc, unit, clock
        self.done, self.started, self.logged_steps = 0, clock(), 0
        self.logged_at = self.started
        show = self.total >= BAR_FROM if bar is None else bar
        self.bar = _bar(self.total, desc, unit, show)

    def line(self) -> str:
        """done/total (percent), rate and ETA, as logged."""
        elapsed = max(self.clock() - self.started, 1e-9)
        rate = self.done / elapsed
        percent = 100 * self.done / self.total if self.total else 100.0
        eta = _clock_text((self.total - self.done) / rate) if rate > 0 else "?"
        return (f"{self.desc}: {self.done:,}/{self.total:,} {self.unit} ({percent:.0f}%), {rate:,.1f} {self.unit}/s, "
                f"elapsed {_clock_text(elapsed)}, ETA {eta}")

    def update(self, count: int = 1) -> None:
        """Count `count` more units done."""
        self.done += count
        self.bar.update(count)
        steps = LOG_STEPS if not self.total else min(LOG_STEPS, math.floor(LOG_STEPS * self.done / self.total))
        now = self.clock()
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
