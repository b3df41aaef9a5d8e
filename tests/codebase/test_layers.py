"""The package layers: imports only go down (redaction < errors < io < corpus < retrieval < evaluation < analysis <
report < llm < configuration < records < project < execution < cli), so each stage can be read, tested and reused
without the ones above it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "rankbench"
LAYERS = ("redaction", "errors", "io", "corpus", "retrieval", "evaluation", "analysis", "report", "llm",
          "configuration", "records", "project", "execution", "cli")


def _layer(module: str) -> int:
    """Layer of a rankbench module given as `a.b` under the package (`__init__` is the public API: top)."""
    top = module.split(".")[0]
    return LAYERS.index(top) if top in LAYERS else len(LAYERS)


def _imports(path: Path) -> list[str]:
    """rankbench modules a file imports, as `a.b` under the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rankbench"):
            base = node.module.removeprefix("rankbench").lstrip(".")
            found += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name.removeprefix("rankbench.") for a in node.names if a.name.startswith("rankbench.")]
    return found


def test_imports_only_go_down_the_layers() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        if module == "__init__":
            continue
        for imported in _imports(path):
            if _layer(imported) > _layer(module):
                upward.append(f"{module} imports {imported}")
    assert not upward, "\n".join(upward)


def _module_of(imported: str, modules: set[str]) -> str | None:
    """The module an imported name lives in (`a.b.Name` -> `a.b`), or None outside the package's modules."""
    parts = imported.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in modules), None)


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of the graph (module -> modules it imports), as a path back to its start, or []."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return path[path.index(module):] + [module]
        if module in done:
            return []
        for imported in sorted(graph[module]):
            found = visit(imported, path + [module])
            if found:
                return found
        done.add(module)
        return []

    return next((found for module in sorted(graph) if (found := visit(module, []))), [])


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or through others, counting imports inside functions and under
    TYPE_CHECKING (the encoders and their kinds were such a cycle, hidden by imports where used)."""
    paths = {".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__"): p
             for p in PACKAGE.rglob("*.py")}
    graph = {module: {found for name in _imports(path) if (found := _module_of(name, set(paths))) not in (None, module)}
             for module, path in paths.items()}
    assert not _cycle(graph), " -> ".join(_cycle(graph))


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_every_module_is_in_a_layer() -> None:
    stray = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if p.parent == PACKAGE and p.stem not in ("__init__", "redaction", "errors", "cli")]
    assert not stray, f"modules outside the stage packages: {stray}"


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from rankbench.configuration.config import check_config\nfrom rankbench.io import files\n")
    assert _imports(module) == ["configuration.config.check_config", "io.files"]
    assert _layer("configuration.config.check_config") > _layer("evaluation.metrics") > _layer("io.files")


def test_every_package_is_a_layer_and_the_run_side_is_split_by_kind() -> None:
    """Each stage package is in the layer order; the packages of what runs the workflow stay small enough to read as
    one thing (the old `pipeline/` held 23 modules of four kinds, now configuration, records, project, execution)."""
    packages = {p.parent for p in PACKAGE.rglob("*.py")} - {PACKAGE}
    tops = {p.relative_to(PACKAGE).parts[0] for p in packages}
    assert tops - {"workflow"} <= set(LAYERS), f"packages outside the layer order: {sorted(tops - set(LAYERS))}"
    crowded = {name: n for name in ("configuration", "records", "project", "execution", "cli")
               if (n := len([m for m in (PACKAGE / name).glob("*.py") if m.stem != "__init__"])) > 12}
    assert not crowded, f"packages of more than 12 modules: {crowded}"
