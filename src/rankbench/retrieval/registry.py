"""Method types: which take other methods' runs as input."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FUSION_TYPES = ("rrf", "combsum", "combmnz")
FIRST_STAGE_TYPES = ("bm25", "dense")
METHOD_TYPES = FIRST_STAGE_TYPES + FUSION_TYPES + ("rerank", "external")


def method_inputs(spec: Mapping[str, Any]) -> list[str]:
    """Names of the runs a method consumes (fusion: `inputs`; rerank: `input`)."""
    if spec["type"] in FUSION_TYPES:
        return list(spec.get("inputs", []))
    if spec["type"] == "rerank":
        return [spec["input"]]
    return []
