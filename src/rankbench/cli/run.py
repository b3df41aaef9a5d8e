"""`rankbench run`: its own options and the workflow's launch, with no import of what the jobs load (pandas, Arrow,
the evaluation layer), so that Snakemake starts ~0.5 s sooner."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rankbench.errors import EXIT_USAGE, InputError
from rankbench.execution.launch import run_workflow

RUN_HELP = "run the workflow in this project folder (Snakemake options follow)"
RUN_DESCRIPTION = ("Run rankbench's packaged workflow in the current folder: its config.yaml, its results/. Other "
                   "options go to Snakemake (e.g. --cores 2, -n).")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """`rankbench run`'s own options (everything else goes to Snakemake)."""
    parser.add_argument("--quick", action="store_true",
                        help="only what the comparison page needs: runs, metrics, aggregate, the page")


def run_command(argv: Sequence[str]) -> int:
    """`rankbench run [--quick] [Snakemake options]` in the current folder; its exit code."""
    parser = argparse.ArgumentParser(prog="rankbench run", description=RUN_DESCRIPTION, allow_abbrev=False)
    add_run_options(parser)
    args, snakemake_args = parser.parse_known_args(argv)
    try:
        return run_workflow(snakemake_args, args.quick, Path.cwd())
    except InputError as error:
        print(f"rankbench: {error}", file=sys.stderr)
        return EXIT_USAGE
