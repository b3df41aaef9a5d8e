"""A method type is its registry entry plus its own module and rules files: no other code compares a type's name
(issue 24.1), so the rules, config checks, provenance, cost and history read what a type does from the registry, and
no other Snakemake file names a type's rules (issue 37.1): the shared rules read what a type registers in
method_tables.smk.
Encoder kinds and reranker scorer kinds likewise: each is a row of its table, and no code compares a kind's name
outside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rankbench.retrieval.encoders.kinds import ENCODER_KINDS
from rankbench.retrieval.registry import FAMILIES, METHOD_TYPES
from rankbench.retrieval.scorer_kinds import SCORER_KINDS

REPO = Path(__file__).resolve().parents[2]
# Files that may name types: the registry, and a type's own module with its scripts (fusion picks its formula).
ALLOWED = {"src/rankbench/retrieval/registry.py": set(METHOD_TYPES),
           "src/rankbench/retrieval/fusion.py": {"rrf", "combsum", "combmnz"},
           "workflow/scripts/fuse.py": {"rrf", "combsum", "combmnz"}}
# Snakemake files: a type name compared (== "bm25", in ("dense", ...)) or methods picked by type.
SMK_COMPARISON = re.compile(r"""(?:==|!=|\bin)\s*[(\[{]?\s*["']([\w-]+)["']|methods_of_type\(\s*["']([\w-]+)["']""")


def _compared_names(tree: ast.AST, types: set[str]) -> list[tuple[int, str]]:
    """(line, string) of every string constant a comparison tests against (of `x in y`, y's: `"llm" in config` asks
    for a key), or a table by type keys by."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            membership = all(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            for operand in node.comparators if membership else [node.left, *node.comparators]:
                items = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
                found += [(node.lineno, item.value) for item in items
                          if isinstance(item, ast.Constant) and isinstance(item.value, str)]
        elif isinstance(node, ast.Dict):  # a table by type has two or more type names as keys (a config may name one)
            keys = [key.value for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]
            found += [(node.lineno, key) for key in keys] if len(set(keys) & types) > 1 else []
    return found


def type_name_comparisons(root: Path, types: set[str], allowed: dict[str, set[str]] | None = None) -> list[str]:
    """`file:line: name` wherever code under root (and its Snakemake files) compares one of these
    names outside the files allowed to (the method types' ALLOWED by default)."""
    allowed = ALLOWED if allowed is None else allowed
    hits = []
    python = [*root.glob("src/rankbench/**/*.py"), *root.glob("workflow/scripts/*.py")]
    for path in sorted(python):
        relative = path.relative_to(root).as_posix()
        hits += [f"{relative}:{line}: {name}" for line, name in _compared_names(ast.parse(path.read_text()), types)
                 if name in types - allowed.get(relative, set())]
    snakemake_files = [*root.glob("workflow/rules/**/*.smk"), *root.glob("Snakefile"), *root.glob("workflow/Snakefile")]
    for path in sorted(snakemake_files):
        relative = path.relative_to(root).as_posix()
        for line, text in enumerate(path.read_text().splitlines(), 1):
            hits += [f"{relative}:{line}: {name}" for match in SMK_COMPARISON.finditer(text)
                     for name in filter(None, match.groups()) if name in types]
    return hits


# A type's own files: workflow/rules/methods/<name>.smk (its rules) and <name>_common.smk (its helpers), <name> being
# the type's, or its family's where types share their rules (rrf, combsum and combmnz: fusion.smk).
METHODS_FOLDER = "workflow/rules/methods"
RULE = re.compile(r"^rule (\w+):", re.MULTILINE)


def own_file(type_name: str) -> str:
    """The stem of a method type's rules file."""
    kind = METHOD_TYPES[type_name]
    shared = [name for name, other in METHOD_TYPES.items() if other.run_rule == kind.run_rule]
    return kind.family if len(shared) > 1 else type_name


def foreign_rule_names(root: Path) -> list[str]:
    """`file:line: rule` wherever a Snakemake file names a rule of a method type's file (quoted, as `rules.<name>` or
    as a path segment) outside that type's own two files."""
    owner = {rule: path.stem.removesuffix("_common") for path in (root / METHODS_FOLDER).glob("*.smk")
             for rule in RULE.findall(path.read_text())}
    if not owner:
        return []
    used = re.compile(r"""(?:["'/]|\brules\.)(""" + "|".join(map(re.escape, owner)) + r""")(?=["'/]|\b(?!-))""")
    hits = []
    for path in sorted([*root.glob("workflow/rules/**/*.smk"), *root.glob("workflow/Snakefile")]):
        relative = path.relative_to(root).as_posix()
        mine = path.stem.removesuffix("_common") if path.parent == root / METHODS_FOLDER else None
        for line, text in enumerate(path.read_text().splitlines(), 1):
            hits += [f"{relative}:{line}: {rule}" for rule in used.findall(text) if owner[rule] != mine]
    return hits


def test_no_code_compares_a_method_type_name_outside_the_registry_and_its_module() -> None:
    hits = type_name_comparisons(REPO, set(METHOD_TYPES))
    assert not hits, "compare registry fields instead of type names:\n" + "\n".join(hits)


def test_no_code_compares_an_encoder_kind_name_outside_the_table_of_kinds() -> None:
    allowed = {"src/rankbench/retrieval/encoders/kinds.py": set(ENCODER_KINDS),
               "src/rankbench/llm/chat.py": {"openai"}}  # the chat backend of that name, not the encoder kind
    hits = type_name_comparisons(REPO, set(ENCODER_KINDS), allowed)
    assert not hits, "read a column of retrieval/encoders/kinds.py instead of a kind name:\n" + "\n".join(hits)


def test_no_code_compares_a_scorer_kind_name_outside_the_table_of_scorer_kinds() -> None:
    allowed = {"src/rankbench/retrieval/scorer_kinds.py": set(SCORER_KINDS)}
    hits = type_name_comparisons(REPO, set(SCORER_KINDS), allowed)
    assert not hits, "read a column of retrieval/scorer_kinds.py instead of a kind name:\n" + "\n".join(hits)


def test_the_check_finds_type_names_in_python_and_snakemake(tmp_path: Path) -> None:
    (tmp_path / "src/rankbench/execution").mkdir(parents=True)
    (tmp_path / "workflow/rules").mkdir(parents=True)
    (tmp_path / "src/rankbench/execution/m.py").write_text(
        'RULES = {"bm25": "x", "dense": "y"}\nconfig = {"bm25": {}}\n'
        'if spec["type"] in ("dense", "other"):\n    pass\nok = kind == "chunk"\nkey = "bm25" in config\n')
    (tmp_path / "workflow/rules/common.smk").write_text(
        'if METHOD_SPECS[m]["type"] == "bm25":\n    pass\nx = methods_of_type("rerank")\n')
    assert type_name_comparisons(tmp_path, {"bm25", "dense", "rerank"}) == [
        "src/rankbench/execution/m.py:1: bm25", "src/rankbench/execution/m.py:1: dense",
        "src/rankbench/execution/m.py:3: dense",
        "workflow/rules/common.smk:1: bm25", "workflow/rules/common.smk:3: rerank"]


def test_a_type_s_rules_are_in_its_own_file_and_named_nowhere_else() -> None:
    """Each type's run rule and index rule are defined in its own rules file; no other Snakemake file names them."""
    for name, kind in METHOD_TYPES.items():
        assert own_file(name) in {*METHOD_TYPES, *FAMILIES}
        rules = set(RULE.findall((REPO / METHODS_FOLDER / f"{own_file(name)}.smk").read_text()))
        assert {kind.run_rule, *([kind.index.rule] if kind.index else [])} <= rules, name
    hits = foreign_rule_names(REPO)
    assert not hits, "read what the type registers in method_tables.smk instead of its rule names:\n" + "\n".join(hits)


def test_the_check_finds_a_type_s_rule_named_outside_its_files(tmp_path: Path) -> None:
    (tmp_path / METHODS_FOLDER).mkdir(parents=True)
    (tmp_path / METHODS_FOLDER / "rerank.smk").write_text('rule rerank:\n    input:\n        "x",\n')
    (tmp_path / METHODS_FOLDER / "rerank_common.smk").write_text('R = methods_of_rule("rerank")\n')
    (tmp_path / METHODS_FOLDER / "fusion.smk").write_text('rule fuse:\n    input:\n        rules.rerank.output,\n')
    (tmp_path / "workflow/rules/report.smk").write_text(
        'x = methods_of_rule("rerank")\ny = f"{LOGS}/rerank/{{qset}}.log"\nz = "reranked"\n# rerank jobs\n')
    assert foreign_rule_names(tmp_path) == [
        "workflow/rules/methods/fusion.smk:3: rerank", "workflow/rules/report.smk:1: rerank",
        "workflow/rules/report.smk:2: rerank"]
