"""The one error type for bad user input: it names the file, the record and the fix, with any secret redacted and
every number written plainly."""

from __future__ import annotations

import re
from pathlib import Path

from rankbench.redaction import redact

# numpy >= 2 writes a scalar's repr as its type and value (`np.float64(nan)`, `np.int64(3)`, `np.str_('a')`,
# `np.True_`): a value taken from a frame or an array and shown with !r reads so in a message.
_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint|complex|str_|bytes_)\d*\((-?[^()]*)\)|\bnp\.(True|False)_")


def plain_numbers(text: str) -> str:
    """text with every numpy scalar's repr written as the plain value (`nan`, `3`, `'a'`, `True`)."""
    return _NUMPY_SCALAR.sub(lambda match: match[1] if match[1] is not None else match[2], text)

# Exit codes of every `rankbench` command (docs/reference/eval-cli.md): success or a passed gate, a failed check (a
# regression shown), bad usage or input (an InputError, argparse's own errors), and a gate that cannot tell.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


class InputError(ValueError):
    """Bad input that the user must fix; the message is a one-paragraph explanation, never a traceback, and holds no
    secret (the parts are redacted too: callers build other messages from them)."""

    def __init__(self, path: str | Path | None, where: str | None, problem: str, fix: str) -> None:
        self.path = redact(str(path)) if isinstance(path, str) else path
        self.where = plain_numbers(redact(where)) if where else where
        self.problem, self.fix = plain_numbers(redact(problem)), plain_numbers(redact(fix))
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
