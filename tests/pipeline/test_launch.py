"""`rankbench run`: the Snakemake command it builds (the packaged Snakefile, the project's config, cores, --quick)
and the quick flag's check."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankbench.errors import InputError
from rankbench.pipeline.launch import SNAKEFILE, quick_mode, snakemake_command


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
