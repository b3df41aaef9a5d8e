"""Waiting for a process the test stopped (or had stopped) to end."""

from __future__ import annotations

import time

from rankbench.execution.processes import alive


def assert_ends_within(pid: int, seconds: float, message: str) -> None:
    """Fail with `message` unless process pid has ended (a zombie counts as ended) within `seconds`."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        assert time.monotonic() < deadline, message
        time.sleep(0.05)
