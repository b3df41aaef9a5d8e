"""What each method type registers for the shared rules and pages, checked against the registry's declaration.

A type's helpers, workflow/rules/methods/<type>_common.smk (or its family's, `<family>_common.smk`, when types share
their rules), fill the tables of workflow/rules/method_tables.smk that the shared rules read instead of any type's
names (retrieval/registry.py, REGISTRATIONS). A table a type owes but does not fill fails late and far away (a
missing INDEX_NAMES entry made a dry run stop on `MissingInputException` for `…/None.npz` in the cost page, or plan
fewer jobs in silence), so both sides are checked when a run starts:

- check_registration_files reads the helpers files themselves (plain Python: `snakemake --lint` keeps rules out of
  them), so `rankbench check`, which never parses the Snakefile, refuses what the workflow would;
- check_tables looks at the tables the Snakefile built from them, for the config's methods.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rankbench.errors import InputError, raise_all
from rankbench.retrieval.registry import EVERY_METHOD, METHOD_TYPES, REGISTRATIONS, MethodType, builds_index

# The helpers files of the method types shipped with the package (the workflow's own folder).
METHOD_RULES = Path(__file__).parents[1] / "workflow" / "rules" / "methods"
GUIDE = 'docs/development.md, "Add a method type"'
# How a helpers file fills a table: `TABLE[key] = ...`, or one of these methods called on it.
_FILLING_CALLS = {"update", "extend", "append", "setdefault", "__setitem__"}


def helpers_file(name: str, kind: MethodType, folder: Path) -> Path:
    """The file a type's helpers are in: `<type>_common.smk`, else its family's (types sharing their rules)."""
    own = folder / f"{name}_common.smk"
    family = folder / f"{kind.family}_common.smk"
    return own if own.exists() or not family.exists() else family


def filled_tables(path: Path) -> dict[str, set[str]]:
    """The tables of REGISTRATIONS a helpers file fills -> the constant keys it assigns (`INDEX_NAMES["rule"]`)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError as error:
        raise InputError(path, f"line {error.lineno}", "is not plain Python, as a type's helpers file must be (its "
                         "rules go in the type's other file)", f"Move rules out of it ({GUIDE}).") from None
    filled: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        table, key = None, None
        if isinstance(node, ast.Assign | ast.AugAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    table = target.value.id
                    key = target.slice.value if isinstance(target.slice, ast.Constant) else None
                elif isinstance(target, ast.Name) and isinstance(node, ast.AugAssign):
                    table = target.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.attr in _FILLING_CALLS:
            table = node.func.value.id
        if table in REGISTRATIONS:
            filled.setdefault(table, set()).update([str(key)] if key is not None else [])
    return filled


def check_registration_files(folder: Path | None = None) -> None:
    """Every type's helpers file (in `folder`, default: the package's) fills exactly the tables its registry entry owes
    (MethodType.owed), INDEX_NAMES under its index rule's name; every mistake is reported, naming the type, the file
    and the table."""
    folder = folder or METHOD_RULES
    files = {name: helpers_file(name, kind, folder) for name, kind in METHOD_TYPES.items()}
    shown = {path: _shown(path, folder) for path in set(files.values())}
    filled = {path: filled_tables(path) for path in set(files.values()) if path.exists()}
    errors = []
    for name, kind in METHOD_TYPES.items():
        path = files[name]
        for table in kind.owed:
            keys = filled.get(path, {}).get(table)
            rule = kind.index.rule if kind.index else ""
            if table == "INDEX_NAMES" and (keys is None or rule not in keys):
                errors.append(InputError(shown[path], f"method type {name!r}", f"registers no "
                              f'INDEX_NAMES["{rule}"], which its index needs: rule {rule} names its jobs by the '
                              "index's name (its `method` or `index` wildcard)", f'Add `INDEX_NAMES["{rule}"] = '
                              f"{name}_index_name`, the function naming the index a method searches ({GUIDE})."))
            elif keys is None:
                errors.append(InputError(shown[path], f"method type {name!r}", f"fills no {table}, which its "
                              f"registry entry declares ({REGISTRATIONS[table]})", f"Fill it there, or take {table} "
                              f"out of `registers` in its entry of src/rankbench/retrieval/registry.py ({GUIDE})."))
    for path, tables in sorted(filled.items()):
        serves = {name: kind for name, kind in METHOD_TYPES.items() if files[name] == path}
        for table, keys in sorted(tables.items()):
            owing = [kind for kind in serves.values() if table in kind.owed]
            rules = {kind.index.rule for kind in owing if kind.index}
            types = f"method type {' or '.join(map(repr, serves))}"
            if not owing:
                errors.append(InputError(shown[path], types, f"fills {table}, which its registry entry does not "
                              "declare (an index named by its `method` or `index` wildcard owes INDEX_NAMES, the "
                              "other tables are listed in `registers`)", "Declare it in the type's entry of "
                              f"src/rankbench/retrieval/registry.py, or take it out of the file ({GUIDE})."))
            for key in sorted(keys - rules) if table == "INDEX_NAMES" else []:
                errors.append(InputError(shown[path], types, f'fills INDEX_NAMES["{key}"], but no rule {key} builds '
                              f"its index (its registry entry's: {', '.join(sorted(rules))})",
                              f"Register the name under the index rule's name ({GUIDE})."))
    raise_all(errors)


def check_tables(specs: Mapping[str, Mapping[str, Any]], tables: Mapping[str, Any]) -> None:
    """The tables the Snakefile built (name -> table) hold what the config's methods need from them: each method's
    index rule in INDEX_NAMES where its type owes it, each method in the tables its type fills for every method,
    and no method in a table its type does not declare."""
    errors = []
    for method, spec in sorted(specs.items()):
        name, kind = spec["type"], METHOD_TYPES[spec["type"]]
        path = _shown(helpers_file(name, kind, METHOD_RULES), METHOD_RULES)
        if "INDEX_NAMES" in kind.owed and builds_index(spec) and kind.index and \
                kind.index.rule not in tables["INDEX_NAMES"]:
            errors.append(InputError(path, f"method type {name!r}", f'registers no INDEX_NAMES["{kind.index.rule}"], '
                          f"so the index method {method!r} searches has no name", f"Add it ({GUIDE})."))
        for table in EVERY_METHOD:
            needed = table in kind.owed and (table != "INDEX_STATS" or builds_index(spec))
            if needed and method not in tables[table]:
                errors.append(InputError(path, f"method type {name!r}", f"puts method {method!r} in no {table} "
                              f"({REGISTRATIONS[table]})", f"Fill {table} for every method of the type ({GUIDE})."))
        for table in ("INDEX_STATS", "INDEX_BLOCKS", "ANN_RECALL_METHODS", "RERANKED_METHODS"):
            if method in tables[table] and table not in kind.owed:
                errors.append(InputError(path, f"method type {name!r}", f"puts method {method!r} in {table}, which "
                              "its registry entry does not declare", "Add it to `registers` in the type's entry of "
                              f"src/rankbench/retrieval/registry.py ({GUIDE})."))
    raise_all(errors)


def _shown(path: Path, folder: Path) -> str:
    """A helpers file as the messages name it: from the workflow folder when it is the package's."""
    return f"workflow/rules/methods/{path.name}" if folder == METHOD_RULES else str(path)
