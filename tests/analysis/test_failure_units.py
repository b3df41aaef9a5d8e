"""Failure classes are decided and printed in one unit: a recall failure of a rerank has every input's first relevant
chunk beyond the depth, a ranking failure one within it, checked on random multi-chunk runs, SciFact-like runs (one
chunk per document, numeric ids) and the demo's."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from rankbench.analysis.failures import RANKING, RECALL, analyse
from rankbench.configuration.config import expand_methods

INPUT_RANK = re.compile(r"^(.+): (?:chunk (\d+)|not retrieved)$")


def check_classes(failures: pd.DataFrame, specs: Mapping[str, Mapping[str, Any]],
                  runs: Mapping[str, pd.DataFrame] | None = None, relevant_docs: pd.DataFrame | None = None) -> int:
    """Assert the invariant over every classified failure; with the runs and the relevant documents, also that each
    printed rank is the first chunk of a relevant document, found here by a plain loop. Returns the rows checked."""
    classified = failures[failures["class"] != ""]
    for method, qid, verdict, input_ranks in zip(classified["method"], classified["qid"], classified["class"],
                                                 classified["input_ranks"]):
        depth = specs[method].get("depth")
        printed = {}
        for part in input_ranks.split("; "):
            match = INPUT_RANK.match(part)
            assert match, part
            printed[match.group(1)] = int(match.group(2)) if match.group(2) else None
        within = [rank is not None and (depth is None or rank <= depth) for rank in printed.values()]
        assert verdict == (RANKING if any(within) else RECALL), (method, qid, input_ranks, depth)
        if runs is not None and relevant_docs is not None:
            docs = set(relevant_docs.loc[relevant_docs["qid"] == qid, "item_id"])
            for name, rank in printed.items():
                run = runs[name]
                chunk_ranks = [r for q, d, r in zip(run["qid"], run["doc_id"], run["rank"]) if q == qid and d in docs]
                assert rank == (min(chunk_ranks) if chunk_ranks else None), (name, qid)
    return len(classified)


def random_runs(seed: int, docs: int, chunks_per_doc: int, numeric: bool) -> tuple[dict[str, pd.DataFrame],
                                                                                   pd.DataFrame, pd.DataFrame]:
    """A first stage over chunks (several per document unless chunks_per_doc is 1), a rerank of its top 8 and
    document qrels: runs, qrels, questions."""
    rng = np.random.default_rng(seed)
    first, rerank, qrels = [], [], []
    for q in range(30):
        qid = str(q + 1) if numeric else f"q{q:02d}"
        order = rng.permutation(docs * chunks_per_doc)[:25]
        for rank, item in enumerate(order, 1):
            doc = f"{item // chunks_per_doc}" if numeric else f"d{item // chunks_per_doc}"
            first.append((qid, rank, f"{doc}#{item % chunks_per_doc}", doc, 100.0 - rank))
        top = order[:8][rng.permutation(8)]
        for rank, item in enumerate(list(top) + list(order[8:]), 1):
            doc = f"{item // chunks_per_doc}" if numeric else f"d{item // chunks_per_doc}"
            rerank.append((qid, rank, f"{doc}#{item % chunks_per_doc}", doc, 100.0 - rank))
        for doc in rng.choice(docs, size=2, replace=False):
            qrels.append(("document", qid, f"{doc}" if numeric else f"d{doc}", 1))
    columns = ["qid", "rank", "chunk_id", "doc_id", "score"]
    runs = {"bm25": pd.DataFrame(first, columns=columns), "rr": pd.DataFrame(rerank, columns=columns)}
    frame = pd.DataFrame(qrels, columns=["grain", "qid", "item_id", "grade"])
    questions = pd.DataFrame({"qid": frame["qid"].unique(), "question": "?", "kind": "x"})
    return runs, frame, questions


@pytest.mark.parametrize(("chunks_per_doc", "numeric"), [(4, False), (1, True)], ids=["random", "scifact-like"])
def test_recall_failures_have_every_first_relevant_chunk_beyond_the_depth(chunks_per_doc: int, numeric: bool) -> None:
    specs = {"bm25": {"type": "bm25"}, "rr": {"type": "rerank", "input": "bm25", "depth": 8}}
    checked = 0
    for seed in range(5):
        runs, qrels, questions = random_runs(seed, 40, chunks_per_doc, numeric)
        labels = pd.DataFrame({"qid": qrels["qid"], "doc_id": qrels["item_id"], "section": None, "grade": 1})
        failures = analyse(runs, specs, {"bm25": qrels, "rr": qrels}, questions, labels, pd.Series({"x": ""}),
                           "document", k=3)
        checked += check_classes(failures, specs, runs, qrels)
        assert set(failures.loc[failures["method"] == "rr", "class"]) == {RECALL, RANKING}
    assert checked > 50


@pytest.mark.slow
def test_the_demo_failure_classes_are_in_chunks(demo: Path) -> None:
    config = yaml.safe_load((demo / "config.yaml").read_text())
    specs = expand_methods(config["methods"], "config")
    failures = pd.read_parquet(demo / "results/demo/v1/failures.parquet")
    assert check_classes(failures, specs) > 10
    page = (demo / "results/demo/v1/failures.md").read_text()
    assert "decided in chunks" in page and re.search(r"bm25: chunk \d+", page)
