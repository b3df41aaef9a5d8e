"""The one error type for bad user input: it names the file, the record and the fix."""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad input that the user must fix; the message is a one-paragraph explanation, never a traceback."""

    def __init__(self, path: str | Path | None, where: str | None, problem: str, fix: str) -> None:
        self.path, self.where, self.problem, self.fix = path, where, problem, fix
        location = str(path) if path is not None else "input"
        if where:
            location = f"{location}, {where}"
        super().__init__(f"{location}: {problem}. {fix}")
