"""The vector-size page: compressed indexes against their float flat twins, with the pairs table's paired tests and
Holm's correction over the page's tests (checked against statsmodels)."""

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from rankbench.evaluation.scoring import summarize
from rankbench.records.serving import serving_row, serving_table, with_footprint
from rankbench.report.comparison import cost_page
from rankbench.report.vector_size import vector_size_page
from rankbench.retrieval.dense import float_twins

METHODS = {"bm25": {"type": "bm25", "chunker": "s"},
           "dense": {"type": "dense", "encoder": "e", "chunker": "s"},
           "dense-int8": {"type": "dense", "encoder": "e", "chunker": "s", "index": {"kind": "flat",
                                                                                      "quantization": "int8"}},
           "dense-d128": {"type": "dense", "encoder": "e", "chunker": "s", "index": {"kind": "flat",
                                                                                      "dimensions": 128}},
           "dense-hnsw": {"type": "dense", "encoder": "e", "chunker": "s", "index": {"kind": "hnsw"}},
           "other-binary": {"type": "dense", "encoder": "x", "chunker": "s",
                            "index": {"kind": "flat", "quantization": "binary", "rescore": 50}}}
# What serving each takes (records/footprint.py's frame): the re-scoring binary index holds its float vectors too.
SERVED = pd.DataFrame({"method": ["dense", "dense-int8", "dense-d128", "other-binary"],
                       "ram_bytes": [1_536_045.0, 386_000.0, 512_045.0, 48_100.0 + 1_536_000.0],
                       "disk_bytes": [1_536_045.0, 386_000.0, 512_045.0, 48_100.0 + 1_536_128.0],
                       "dimensions": [384.0, 384.0, 128.0, 384.0], "tokens_per_query": 0.0,
                       "requests_per_query": 0.0, "usd_per_1k": np.nan})
STATS = {"dense": {"build_s": 0.1}}
REPORT = {"grain": "document", "headline": [["ndcg", 10]]}


def test_compressed_indexes_find_their_float_flat_twin() -> None:
    dense = {m: spec for m, spec in METHODS.items() if spec["type"] == "dense"}
    assert float_twins(dense) == {"dense-d128": "dense", "dense-int8": "dense", "other-binary": None}


def scored() -> tuple[dict[str, np.ndarray], pd.DataFrame, pd.DataFrame]:
    """Per-question nDCG@10 of each method (int8 a little worse than float, 128 dimensions worse still), and the
    aggregate and pairs the evaluation computes from them."""
    rng = np.random.default_rng(0)
    base = rng.uniform(size=60)
    values = {"bm25": rng.uniform(size=60), "dense": base, "dense-int8": np.clip(base - 0.01, 0, 1),
              "dense-d128": np.clip(base - rng.uniform(0, 0.3, size=60), 0, 1), "other-binary": base}
    per_query = pd.concat([pd.DataFrame({"method": m, "qid": [f"q{i}" for i in range(60)], "metric": "ndcg",
                                         "k": 10, "value": v, "grain": "document", "kind": "all"})
                           for m, v in values.items()])
    aggregate, pairs = summarize(per_query, ["grain", "kind"], None, n_resamples=2000)
    return values, aggregate, pairs


def test_the_page_tests_each_compressed_index_against_its_twin_with_holm_over_the_page() -> None:
    values, aggregate, pairs = scored()
    base = values["dense"]
    twins = float_twins({m: spec for m, spec in METHODS.items() if m != "bm25"})
    indexes = {m: METHODS[m].get("index", {"kind": "flat"}) for m in SERVED["method"]}
    page = vector_size_page(aggregate, pairs, indexes, SERVED, twins, REPORT, 2000, "demo", "v1")
    assert page == vector_size_page(aggregate, pairs, indexes, SERVED, twins, REPORT, 2000, "demo", "v1")
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ") for line in page.splitlines()
            if line.startswith("| ") and not line.startswith("| method")}
    assert list(rows) == ["dense", "dense-d128", "dense-int8", "other-binary"]
    raw = [pairs[(pairs["method_a"] == "dense") & (pairs["method_b"] == m)]["p_randomization"].item()
           for m in ("dense-d128", "dense-int8")]
    expected = multipletests(raw, method="holm")[1]
    for method, p in zip(("dense-d128", "dense-int8"), expected):
        assert rows[method][-1].removesuffix(" |") in (f"{p:.3f}", "< 0.001")
        diff = values[method].mean() - base.mean()
        assert rows[method][-2].startswith(f"{diff:+.3f} [")
    assert rows["dense-int8"][7] == "4.0" and rows["dense-int8"][3] == "int8"  # × smaller, codes
    assert rows["other-binary"][1] == "none" and rows["other-binary"][-1] == "– |"
    assert rows["other-binary"][6] == "1.584"  # MB in RAM: codes and the float vectors it re-scores with


def test_the_cost_page_shows_what_serving_takes_and_each_dense_index_build_time() -> None:
    aggregate = scored()[1]
    cost = pd.DataFrame({"method": ["bm25", "dense"], "index_s": 1.0, "query_s": 1.0, "questions": 10,
                         "p50_ms": np.nan, "p95_ms": np.nan, "onetime_s": np.nan, "batched": False, "cached": 0,
                         "calls": np.nan, "call_tokens": np.nan, "stages": "", "index_tokens": np.nan,
                         "query_tokens": np.nan, "index_sent": np.nan, "query_sent": np.nan})
    timed = serving_table([serving_row(m, [0.01, 0.02], 0.1, 1.0, 1, "probe", 0) for m in ("bm25", "dense")])
    page = cost_page(aggregate, cost, {**REPORT, "alpha": 0.05, "ci": False}, "demo", "v1",
                     indexes=STATS, serving=with_footprint(timed, SERVED))
    rows = {line.split(" | ")[0]: line for line in page.splitlines() if line.startswith("| ")}
    assert "| 1.536 | 1.536 | 384 | 0.10 |" in rows["| dense"] and "| – | – | – | – |" in rows["| bm25"]
    assert "MB in RAM" in page and "$ per 1,000" not in page  # no price table: no money column


def test_a_compressed_method_written_as_the_docs_show_finds_the_twin_init_wrote() -> None:
    """Before: `init` writes `filters: []` (and `chunker`, `index: {kind: flat}`) for dense-e5, a compressed method
    written as the docs show has none of them, and every compressed method showed `float twin: none`."""
    from rankbench.project.project_init import project_config

    written = project_config("demo", "v1", "english")["methods"]
    assert written["dense-e5"]["filters"] == []  # what made the raw specs differ
    methods = {"dense-e5": {**written["dense-e5"]},
               "dense-e5-int8": {"type": "dense", "encoder": "e5", "chunker": "sections",
                                 "index": {"kind": "flat", "quantization": "int8"}},
               "dense-e5-d128": {"type": "dense", "encoder": "e5", "chunker": "sections", "filters": None,
                                 "rewrite": None, "index": {"kind": "flat", "dimensions": 128}}}
    assert float_twins(methods) == {"dense-e5-int8": "dense-e5", "dense-e5-d128": "dense-e5"}


def test_a_setting_that_changes_the_ranking_keeps_a_method_from_being_a_twin() -> None:
    """Every key the type reads but `index` counts (expansion was left out), filters compared by value."""
    base = {"type": "dense", "encoder": "e", "chunker": "s"}
    methods = {"float": {**base, "filters": ["audience"]}, "float-expanded": {**base, "expansion": "doc2query"},
               "int8": {**base, "filters": ["audience"], "index": {"kind": "flat", "quantization": "int8"}},
               "int8-expanded": {**base, "expansion": "doc2query", "filters": [],
                                 "index": {"kind": "flat", "quantization": "int8"}},
               "int8-other-filters": {**base, "filters": ["as_of"], "index": {"kind": "flat", "quantization": "int8"}},
               "int8-other-encoder": {**base, "encoder": "x", "index": {"kind": "flat", "quantization": "int8"}}}
    assert float_twins(methods) == {"int8": "float", "int8-expanded": "float-expanded", "int8-other-filters": None,
                                    "int8-other-encoder": None}
