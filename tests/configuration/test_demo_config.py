"""The demo's config says true things about itself: its experiment note counts the methods it runs, and every method
says in words what it is (the legend of the comparison table and the explorer show it)."""

from __future__ import annotations

from collections import Counter

import yaml
from workflow_helpers import REPO

from rankbench.configuration.config import expand_methods
from rankbench.configuration.models import method_cards
from rankbench.report.comparison import methods_legend
from rankbench.retrieval.registry import method_type

CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
METHODS = expand_methods(CONFIG["methods"], "config.yaml")


def test_the_experiment_note_counts_the_methods_and_the_rerank_depths() -> None:
    note = CONFIG["experiment"]["note"]
    families = Counter(method_type(spec).family for spec in METHODS.values())
    assert note.startswith(f"{len(METHODS)} methods (")
    assert f"{families['lexical']} BM25" in note and f"{families['dense']} dense" in note
    assert f"{families['fusion']} fusion" in note
    depths = sorted(spec["depth"] for spec in METHODS.values() if spec["type"] == "rerank")
    assert f"top {' and '.join(map(str, depths))}" in note and "bi-encoder" in note
    assert f"{CONFIG['chunker']} chunker" in note


def test_every_demo_method_describes_itself_and_the_legend_shows_it() -> None:
    assert all(spec.get("description") for spec in METHODS.values())
    assert "by hand" in METHODS["bm25-keyword-rewrite"]["description"]
    assert "bi-encoder" in METHODS["bm25+rerank-e5[depth=30]"]["description"]
    cards = method_cards({**CONFIG, "methods": METHODS})
    assert cards["bm25+rerank-e5[depth=30]"]["models"] == ["encoders.e5"]
    assert cards["hybrid[k=60]"]["models"] == ["encoders.e5"]
    legend = methods_legend(cards)
    line = next(line for line in legend if line.startswith("- `bm25-keyword-rewrite` "))
    assert line == f"- `bm25-keyword-rewrite` (bm25): {METHODS['bm25-keyword-rewrite']['description']}"
    assert "- `dense-minilm` (dense; `encoders.minilm`): exact cosine search" in "\n".join(legend)
