"""What the demo exports for other tools: TREC runs with the methods' own scores, their ir_metadata, and TREC qrels
per grain that pytrec_eval scores to the comparison table's values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
import yaml

from rankbench.io.ranked_lists import collapse_to_documents
from rankbench.io.trec import read_trec_run

pytestmark = pytest.mark.slow
MEASURES = {"ndcg_cut_10": ("ndcg", 10), "P_5": ("precision", 5), "recall_10": ("recall", 10),
            "recip_rank": None, "success_1": ("hit", 1)}


def test_exported_bm25_scores_are_the_runs_own(demo: Path) -> None:
    base = demo / "results" / "demo" / "v1" / "runs"
    ours = collapse_to_documents(pd.read_parquet(base / "bm25.parquet")).set_index(["qid", "doc_id"])
    lines = [line.split() for line in (base / "bm25.docs.trec").read_text().splitlines()]
    assert {fields[5] for fields in lines} == {"bm25"}  # the run tag is the method's name
    exported = pd.Series([float(f[4]) for f in lines], index=pd.MultiIndex.from_tuples([(f[0], f[2]) for f in lines]))
    assert len(exported) == len(ours)
    assert np.array_equal(exported.loc[ours.index].to_numpy(), ours["score"].to_numpy())
    reread = read_trec_run(base / "bm25.docs.trec").set_index(["qid", "doc_id"])["rank"]  # trec_eval's order
    assert np.array_equal(reread.loc[ours.index].to_numpy(), ours["rank"].to_numpy())


def test_pytrec_eval_on_the_exported_files_gives_the_comparison_table(demo: Path) -> None:
    base = demo / "results" / "demo" / "v1"
    aggregate = pd.read_parquet(base / "aggregate.parquet")
    with open(base / "qrels" / "sections.docs.qrels") as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    relevant = [qid for qid, items in qrels.items() if max(items.values()) >= 1]
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES))
    table = aggregate[(aggregate["grain"] == "document") & (aggregate["kind"] == "all")]
    compared = 0
    for method in sorted(set(table["method"])):
        with open(base / "runs" / f"{method}.docs.trec") as handle:
            values = evaluator.evaluate(pytrec_eval.parse_run(handle))
        for measure, key in MEASURES.items():
            metric, k = key or ("rr", 0)
            row = table[(table["method"] == method) & (table["metric"] == metric) & (table["k"] == k)]
            if row.empty:
                continue
            mean = np.mean([values.get(qid, {}).get(measure, 0.0) for qid in relevant])  # as trec_eval -c
            assert row["mean"].iloc[0] == pytest.approx(mean, abs=1e-12), (method, measure)
            compared += 1
    assert compared >= 4 * len(set(table["method"]))


def test_every_run_has_its_ir_metadata_and_every_grain_its_qrels(demo: Path) -> None:
    base = demo / "results" / "demo" / "v1"
    metadata = yaml.safe_load((base / "runs" / "bm25.ir_metadata.yaml").read_text())
    assert list(metadata)[:3] == ["schema-version", "run-version", "tag"] and metadata["tag"] == "bm25"
    assert {"platform", "implementation", "method", "data"} <= set(metadata)
    assert metadata["method"]["config"]["type"] == "bm25"
    assert len(metadata["data"]["test collection"]["corpus sha256"]) == 64
    assert metadata["data"]["test collection"]["question set"]["version"] == "v1"
    assert metadata["implementation"]["source"]["version"]
    qrels = pd.read_parquet(base / "qrels" / "sections.parquet")
    for grain, suffix in (("document", "docs"), ("chunk", "chunks")):
        lines = (base / "qrels" / f"sections.{suffix}.qrels").read_text().splitlines()
        assert len(lines) == int((qrels["grain"] == grain).sum()) > 0
