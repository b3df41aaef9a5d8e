"""`python -m rankbench.llm publish SRC --version NAME --dest FILE --lock LOCK`: freeze an LLM output as data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rankbench.errors import InputError
from rankbench.llm.versions import publish


def main(argv: list[str] | None = None) -> int:
    """Copy a generated/judged question-set version or a rewrites file next to the data and register its sha256."""
    parser = argparse.ArgumentParser(prog="python -m rankbench.llm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("publish", help="copy an LLM output into the data folder and freeze it")
    command.add_argument("source", type=Path, help="the file the `llm` target wrote under results/")
    command.add_argument("--version", required=True, help="name in the lock (and in config `qsets`)")
    command.add_argument("--dest", type=Path, required=True, help="where the frozen file lives (never replaced)")
    command.add_argument("--lock", type=Path, required=True, help="the dataset's lock file")
    args = parser.parse_args(argv)
    try:
        digest = publish(args.source, args.dest, args.version, args.lock)
    except InputError as error:
        print(f"rankbench: {error}", file=sys.stderr)
        return 1
    print(f"{args.version}: {args.dest} frozen, sha256 {digest} registered in {args.lock}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
