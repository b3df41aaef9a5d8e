"""Command line: `rankbench freeze` registers a question-set version's hash in its lock file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rankbench.errors import InputError
from rankbench.frozen import freeze


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rankbench` command."""
    parser = argparse.ArgumentParser(prog="rankbench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    freeze_parser = commands.add_parser("freeze", help="register a new question-set version (its sha256) in a lock file")
    freeze_parser.add_argument("path", type=Path, help="the version's JSONL file")
    freeze_parser.add_argument("--version", required=True, help="version name used in config `qsets`")
    freeze_parser.add_argument("--lock", type=Path, required=True, help="the lock file (created if missing)")
    args = parser.parse_args(argv)
    try:
        digest = freeze(args.path, args.version, args.lock)
    except InputError as error:
        print(f"rankbench: {error}", file=sys.stderr)
        return 1
    print(f"{args.version}: sha256 {digest} registered in {args.lock}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
