"""The one error type for bad user input: it names the file, the record and the fix, with any secret redacted."""

from __future__ import annotations

from pathlib import Path

from rankbench.redaction import redact


class InputError(ValueError):
    """Bad input that the user must fix; the message is a one-paragraph explanation, never a traceback, and holds no
    secret (the parts are redacted too: callers build other messages from them)."""

    def __init__(self, path: str | Path | None, where: str | None, problem: str, fix: str) -> None:
        self.path = redact(str(path)) if isinstance(path, str) else path
        self.where = redact(where) if where else where
        self.problem, self.fix = redact(problem), redact(fix)
        location = str(self.path) if self.path is not None else "input"
        if self.where:
            location = f"{location}, {self.where}"
        super().__init__(f"{location}: {self.problem}. {self.fix}")


class InputErrors(InputError):
    """Every mistake one pass over the input found (each an InputError), reported together so that one round trip
    fixes them all: the first SHOWN in full, then how many more."""

    SHOWN = 20

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = list(errors)
        shown = "\n".join(f"- {error}" for error in self.errors[:self.SHOWN])
        more = f"\n- ... and {len(self.errors) - self.SHOWN} more" if len(self.errors) > self.SHOWN else ""
        super().__init__(None, None, f"{len(self.errors)} mistakes", "Fix them all, then run the command again.")
        self.args = (f"{len(self.errors)} mistakes, each with its file and line:\n{shown}{more}\n{self.fix}",)


def raise_all(errors: list[InputError]) -> None:
    """Raise the mistakes found in one pass: none, nothing; one, itself; several, InputErrors (nested ones flat)."""
    flat = [inner for error in errors for inner in (error.errors if isinstance(error, InputErrors) else [error])]
    if len(flat) == 1:
        raise flat[0]
    if flat:
        raise InputErrors(flat)
