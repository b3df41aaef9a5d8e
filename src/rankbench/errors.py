"""The one error type for bad user input: it names the file, the record and the fix, with any secret redacted."""

from __future__ import annotations

from pathlib import Path

from rankbench.redaction import redact

# Exit codes of every `rankbench` command (docs/reference/eval-cli.md): success or a passed gate, a failed check (a
# regression shown), bad usage or input (an InputError, argparse's own errors), and a gate that cannot tell.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


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
