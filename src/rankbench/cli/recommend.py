"""`rankbench recommend`: a version's recommended configuration with its evidence (the box of its comparison page)
and the config fragment to paste (results/<dataset>/<version>/recommended.yaml); exit 0 when every axis is decided,
3 when some are undecided, 2 when the run has not written it."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from rankbench.configuration.defaults import RESULTS
from rankbench.errors import EXIT_INCONCLUSIVE, EXIT_OK, InputError


def _natural(name: str) -> list[object]:
    """v10 after v9."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def recommendation_folder(results: Path, dataset: str | None, version: str | None) -> Path:
    """The version folder holding recommended.yaml: --dataset optional when one dataset has one, --version the
    newest version by name when not given."""
    found = sorted(results.glob("*/*/recommended.json"))
    if dataset is None:
        datasets = sorted({path.parents[1].name for path in found})
        if len(datasets) != 1:
            raise InputError(results, None, "holds a recommended configuration of " + (
                f"several datasets ({', '.join(datasets)})" if datasets else "no dataset"),
                "Choose one with --dataset." if datasets else "Run the workflow (`rankbench run`) first.")
        dataset = datasets[0]
    versions = sorted((path.parent.name for path in found if path.parents[1].name == dataset), key=_natural)
    if version is None and versions:
        version = versions[-1]
    folder = results / dataset / str(version)
    if version not in versions:
        raise InputError(folder / "recommended.json", None, "does not exist: the run wrote no recommended "
                         "configuration of this version", f"Run the workflow first, or choose one of: "
                         f"{', '.join(versions) or 'none'} (--version).")
    return folder


def recommend_command(args: argparse.Namespace) -> int:
    """Print the recommendation and its fragment; exit 3 when an axis is undecided."""
    folder = recommendation_folder(Path(args.results), args.dataset, args.version)
    state = json.loads((folder / "recommended.json").read_text(encoding="utf-8"))
    print(f"# Recommended configuration: {folder.parent.name} {folder.name}\n")
    print((folder / "recommended.md").read_text(encoding="utf-8").rstrip("\n") + "\n")
    print(f"## {folder / 'recommended.yaml'}\n")
    print((folder / "recommended.yaml").read_text(encoding="utf-8").rstrip("\n"))
    if state["undecided"]:
        print(f"\nUndecided: {', '.join(state['undecided'])} (exit {EXIT_INCONCLUSIVE}).")
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def add_recommend_command(commands: argparse._SubParsersAction) -> None:
    """The `recommend` subcommand."""
    parser = commands.add_parser("recommend", help="the recommended configuration of a version with its evidence: "
                                                   "exit 0 every axis decided, 3 some undecided")
    parser.add_argument("--version", help="question-set version (default: the newest by name)")
    parser.add_argument("--dataset", help="dataset name (optional when one has results)")
    parser.add_argument("--results", default=RESULTS, help=f"the results folder (default: {RESULTS})")
    parser.set_defaults(handler=recommend_command)
