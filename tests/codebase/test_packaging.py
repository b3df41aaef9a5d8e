"""Pins agree: environment.yml lists exactly pyproject.toml's runtime pins and linters, and requirements.lock has the
same and the test tools."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _pins(lines: list[str]) -> dict[str, str]:
    """name (lower case, '_' as '-') -> version, for every `name==version` line."""
    pins = {}
    for line in lines:
        name, sep, version = line.strip().partition("==")
        if sep:
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_environment_yml_has_the_pins_of_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pyproject = _pins(project["dependencies"])
    environment = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))
    linters = {name: version for name, version in _pins(project["optional-dependencies"]["test"]).items()
               if name in ("ruff", "mypy")}
    assert len(linters) == 2
    assert _pins(pip) == pyproject | linters  # the runtime pins, and the linters `make lint` runs
    assert "python=3.11" in environment["dependencies"]


def test_requirements_lock_installs_the_same_versions() -> None:
    pyproject = _pins(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    lock = _pins((REPO / "requirements.lock").read_text().splitlines())
    assert {name: lock.get(name) for name in pyproject} == pyproject


def test_requirements_lock_has_the_test_and_slurm_extras() -> None:
    """CI installs the lock only: the extras its tests need (test tools, the SLURM executor) are in it, same pins."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    lock = _pins((REPO / "requirements.lock").read_text().splitlines())
    for extra in ("test", "slurm"):
        pins = _pins(extras[extra])
        assert {name: lock.get(name) for name in pins} == pins, extra


def test_the_package_data_ships_py_typed_and_the_schemas() -> None:
    """A wheel carries what package-data lists (checked by building one: rankbench/py.typed, the schemas and the
    explorer template are in it); every listed pattern must match a file of the package."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["rankbench"]
    assert "py.typed" in data
    for pattern in data:
        assert list((REPO / "src" / "rankbench").glob(pattern)), pattern
