"""The table of reranker scorer kinds (`methods.<name>.scorer.kind` of a rerank method): what each scorer reads, loads
or asks. The config checks, the provenance, the rerank script and the workflow read it; no other code compares a
scorer kind's name (tests/codebase/test_type_names.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CROSS_ENCODER = "cross-encoder"  # the kind whose model folder retrieval/model_files.py checks by this name


@dataclass(frozen=True)
class ScorerKind:
    """One scorer kind. encoder: scores with the vectors of `encoders.<scorer.encoder>` (the method embeds with it);
    model: loads `scorer.model`, a hub id or folder resolved, checked and recorded at start; chat: asks an LLM
    (`scorer.chat`), whose endpoint is recorded and whose threads are the job's; architecture: how config.json's
    architectures must end for the model's scoring head to be in its weights (a random head scores noise)."""

    encoder: bool = False
    model: bool = False
    chat: bool = False
    architecture: str = ""


SCORER_KINDS: dict[str, ScorerKind] = {
    "bi-encoder": ScorerKind(encoder=True),
    CROSS_ENCODER: ScorerKind(model=True, architecture="ForSequenceClassification"),
    "llm": ScorerKind(chat=True),
}


def scorer_kind(scorer: Mapping[str, Any]) -> ScorerKind:
    """The table row of a `scorer` block; an unknown kind (refused by the schema) reads as none of the above."""
    return SCORER_KINDS.get(scorer.get("kind", ""), ScorerKind())


def scorer_encoder(scorer: Mapping[str, Any]) -> str | None:
    """The encoder a scorer scores with (`scorer.encoder` of a kind that reads vectors), else None."""
    return scorer.get("encoder") if scorer_kind(scorer).encoder else None
