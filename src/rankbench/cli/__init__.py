"""The `rankbench` command: `run` is read with light imports (cli/run.py), every other subcommand by the parser of
cli/commands.py."""

from __future__ import annotations

import sys

from rankbench.cli.run import run_command
from rankbench.redaction import redact_uncaught


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rankbench` command. `run`, at the start of every workflow run, is read with light imports
    only (cli/run.py); the other subcommands load cli/commands.py (pandas and the evaluation layer: ~0.5 s)."""
    redact_uncaught()
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["run"]:
        return run_command(arguments[1:])
    from rankbench.cli.commands import dispatch

    return dispatch(arguments)
