"""The method-type registry is the one place a type is declared: the schema, the config checks, the rules and the
analyses agree with it, and a type declared there (plus its rule) is checked, costed and scored like the others."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_helpers import REPO

from rankbench.analysis.failures import candidate_depth
from rankbench.configuration.config import check_config
from rankbench.configuration.rules import RUN_RULES, UNBENCHMARKED, index_stage
from rankbench.errors import InputError
from rankbench.evaluation.scoring import GRAINS
from rankbench.records.cost import method_stages
from rankbench.retrieval import registry, scorer_kinds
from rankbench.retrieval.registry import (
    LIBRARY,
    METHOD_TYPES,
    REQUIRED,
    STRUCTURAL_KEYS,
    MethodType,
    hook,
    method_grains,
    method_inputs,
    types_using,
)

SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
METHOD_SCHEMA = SCHEMA["properties"]["methods"]["additionalProperties"]
RULES = set(re.findall(r"^rule (\w+):", "".join(p.read_text() for p in (REPO / "workflow/rules").rglob("*.smk")),
                       re.MULTILINE))


def test_the_schema_knows_exactly_the_keys_of_the_registry() -> None:
    keys = {key for kind in METHOD_TYPES.values() for key in kind.keys}
    assert set(METHOD_SCHEMA["properties"]) == keys | set(STRUCTURAL_KEYS)


def test_keys_the_schema_requires_by_type_are_required_in_the_registry() -> None:
    for condition in METHOD_SCHEMA["allOf"]:
        type_rule = condition["if"]["properties"]["type"]
        types = type_rule.get("enum", [type_rule.get("const")])
        for kind in types:
            for key in condition["then"]["required"]:
                assert METHOD_TYPES[kind].keys[key] is REQUIRED, (kind, key)


def _rule_block(name: str) -> tuple[Path, str]:
    """The rules file defining a rule and the rule's text (up to the next top-level statement)."""
    for path in (REPO / "workflow/rules").rglob("*.smk"):
        match = re.search(rf"^rule {name}:\n(.*?)(?=^\S|\Z)", path.read_text(), re.MULTILINE | re.DOTALL)
        if match:
            return path, match[1]
    raise AssertionError(f"no rule {name}")


def _type_files(name: str) -> list[Path]:
    """A type's two rules files (its own, else its family's when types share their rules)."""
    folder, family = REPO / "workflow/rules/methods", METHOD_TYPES[name].family
    stem = name if (folder / f"{name}.smk").exists() else family
    return [path for path in (folder / f"{stem}.smk", folder / f"{stem}_common.smk") if path.exists()]


def test_every_type_has_a_rule_that_exists_and_grains_evaluation_knows() -> None:
    assert set(RUN_RULES) == set(METHOD_TYPES)
    stages = [index_stage({"type": kind, "encoder": "e"}, "c", "i") for kind in METHOD_TYPES]
    index_rules = {stage[0] for stage in stages if stage}
    assert set(RUN_RULES.values()) | index_rules | set(UNBENCHMARKED) <= RULES
    assert all(set(kind.grains) <= set(GRAINS) for kind in METHOD_TYPES.values())
    assert method_grains({"type": "external"}) == ["document"]


def test_each_index_rule_is_the_types_own_and_its_jobs_are_named_as_the_registry_says() -> None:
    """The wildcards of an index rule's outputs are its IndexStage's (a named index owes INDEX_NAMES for them), and an
    index rule writing a size-and-build-time record (`stats`) is of a type that registers INDEX_STATS."""
    for name, kind in METHOD_TYPES.items():
        if kind.index is None:
            continue
        path, block = _rule_block(kind.index.rule)
        assert path in _type_files(name), (name, path)
        outputs = block.split("output:", 1)[1].split("\n    log:", 1)[0]
        assert set(re.findall(r"\{\{(\w+)\}\}", outputs)) == set(kind.index.wildcards), name
        assert ("stats=" in outputs) == ("INDEX_STATS" in kind.owed), name


def test_a_key_applies_to_the_types_that_read_it_and_defaults_come_from_the_registry() -> None:
    # A method that ranks the corpus itself names its chunker; one that fuses or reorders runs takes its inputs'.
    assert types_using("chunker") == tuple(name for name, kind in METHOD_TYPES.items() if kind.inputs_key is None)
    # A type reads `rewrite` exactly when its rules send rewritten questions (their texts, vectors or weights).
    assert types_using("rewrite") == tuple(
        name for name in METHOD_TYPES
        if any(re.search(r"\brewrite\b|queries_path\(", path.read_text()) for path in _type_files(name)))
    assert candidate_depth({"type": "rerank", "input": "bm25"}) == METHOD_TYPES["rerank"].keys["depth"]
    assert candidate_depth({"type": "rrf", "inputs": ["a"]}) is None
    assert method_inputs({"type": "rerank", "input": "bm25"}) == ["bm25"]
    assert method_inputs({"type": "combmnz", "inputs": ["a", "b"]}) == ["a", "b"]
    with pytest.raises(ValueError, match="unknown method family"):
        MethodType("sparse-ish")


@pytest.fixture
def late(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hypothetical `late` type declared only in the registry (its keys in the schema)."""
    monkeypatch.setitem(METHOD_TYPES, "late", MethodType("dense", {"encoder": REQUIRED, "chunker": None,
                                                                   "rewrite": None, "filters": []},
                                                         run_rule="retrieve_late"))


def _config(methods: dict) -> dict:
    config = yaml.safe_load((REPO / "tests/fixtures/mini/config.yaml").read_text())
    return {**config, "methods": methods}


def test_a_new_type_in_the_registry_is_checked_costed_and_named(late: None, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    monkeypatch.chdir(REPO)
    config = _config({"colbert": {"type": "late", "encoder": "minilm"}})
    assert check_config(config, SCHEMA, "c.yaml") == {"colbert": {"type": "late", "encoder": "minilm"}}
    with pytest.raises(InputError, match="sets `k`, which a late method does not use"):
        check_config(_config({"colbert": {"type": "late", "encoder": "minilm", "k": 3}}), SCHEMA, "c.yaml")
    with pytest.raises(InputError, match="is a late method without `encoder`"):
        check_config(_config({"colbert": {"type": "late"}}), SCHEMA, "c.yaml")
    stages = method_stages({"colbert": {"type": "late", "encoder": "minilm"}}, "colbert", lambda m: "sections",
                           lambda m: m)
    assert [stage for stage, _, _ in stages] == ["embed_corpus", "embed_queries", "retrieve_late"]


def test_the_sparse_type_is_checked_and_costed_by_its_own_rules(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Its index encodes the corpus (no embed_corpus), its questions have their own rule, its encoder is sparse."""
    monkeypatch.chdir(REPO)
    config = _config({"splade": {"type": "sparse", "encoder": "splade"}})
    config["encoders"] = {**config["encoders"], "splade": {"kind": "sparse", "model": str(tmp_path)}}
    assert check_config(config, SCHEMA, "c.yaml") == {"splade": {"type": "sparse", "encoder": "splade"}}
    methods = {"splade": {"type": "sparse", "encoder": "splade"},
               "splade-llm": {"type": "sparse", "encoder": "splade", "rewrite": "llm"}}
    assert method_stages(methods, "splade", lambda m: "sections", lambda m: m) == [
        ("sparse_queries", "query", {"encoder": "splade"}),
        ("sparse_index", "index", {"chunker": "sections", "encoder": "splade"}),
        ("retrieve_sparse", "query", {"method": "splade"})]
    assert method_stages(methods, "splade-llm", lambda m: "sections", lambda m: m)[0] == (
        "sparse_rewritten_queries", "query", {"encoder": "splade", "rewrite": "llm"})
    assert {"sparse_queries", "sparse_rewritten_queries"} <= RULES
    with pytest.raises(InputError, match=r"uses encoder 'minilm' of kind sentence-transformers, which a sparse "
                                         r"method cannot use.*Use one of: splade"):
        check_config({**config, "methods": {"s": {"type": "sparse", "encoder": "minilm"}}}, SCHEMA, "c.yaml")
    with pytest.raises(InputError, match="uses encoder 'splade' of kind sparse, which a dense method cannot use"):
        check_config({**config, "methods": {"d": {"type": "dense", "encoder": "splade"}}}, SCHEMA, "c.yaml")
    with pytest.raises(InputError, match="uses encoder 'splade' of kind sparse, which a rerank method cannot use"):
        check_config({**config, "methods": {"bm25": {"type": "bm25"}, "r": {
            "type": "rerank", "input": "bm25", "scorer": {"kind": "bi-encoder", "encoder": "splade"}}}},
            SCHEMA, "c.yaml")


def test_the_registry_module_stays_light() -> None:
    """The Snakefile imports it while parsing: nothing but the standard library and the (as light) scorer kinds."""
    for module in (registry, scorer_kinds):
        source = Path(module.__file__).read_text()
        assert set(re.findall(r"^(?:from|import) (\S+)", source, re.MULTILINE)) <= {
            "__future__", "collections.abc", "dataclasses", "typing", "rankbench.retrieval.scorer_kinds"}


def _concrete_defaults() -> dict[str, Any]:
    """Every method key's default as the registry gives it: its own, else the library's (the type's `settings`
    hook); one per key whatever the type (a key two types read has one default)."""
    defaults: dict[str, set[str]] = {}
    for name, kind in METHOD_TYPES.items():
        library = hook(kind.settings)({"type": name}) if kind.settings else {}
        for key, value in kind.keys.items():
            value = library.get(key) if value is LIBRARY else value
            if value is not REQUIRED and value is not None:
                defaults.setdefault(key, set()).add(json.dumps(value))
    assert {key: values for key, values in defaults.items() if len(values) > 1} == {}
    return {key: json.loads(values.pop()) for key, values in defaults.items()}


def test_the_schema_defaults_of_method_keys_are_the_registrys() -> None:
    defaults = _concrete_defaults()
    schema = {key: node["default"] for key, node in METHOD_SCHEMA["properties"].items() if "default" in node}
    assert {key: value for key, value in schema.items() if key in defaults} == \
        {key: value for key, value in defaults.items() if key in schema}
    assert sorted(set(schema) - set(defaults)) == []  # a schema default the registry does not know of


def test_no_rules_file_script_or_module_repeats_a_registry_default() -> None:
    """A key with a registry default is read with method_setting (or any_method_setting), never `.get(key, default)`;
    a key whose default is the library's is never given a literal one (its home is the library's spec class)."""
    keys = [(key, value) for kind in METHOD_TYPES.values() for key, value in kind.keys.items()]
    own = {key for key, value in keys if value is not REQUIRED and value is not None and value is not LIBRARY}
    library = {key for key, value in keys if value is LIBRARY}
    any_default = re.compile(rf"\.get\(\s*[\"']({'|'.join(sorted(own))})[\"']\s*,")
    literal = re.compile(rf"\.get\(\s*[\"']({'|'.join(sorted(library))})[\"']\s*,\s*(-?\d|[\"'\[{{]|True\b|False\b)")
    files = [*(REPO / "workflow/rules").rglob("*.smk"), *(REPO / "workflow/scripts").glob("*.py"),
             *(path for path in (REPO / "src/rankbench").rglob("*.py") if "workflow" not in path.parts
               and path.name != "registry.py")]
    found = [f"{path.relative_to(REPO)}: {match[0]}" for path in files for pattern in (any_default, literal)
             for match in pattern.finditer(path.read_text())]
    assert found == []
