"""Compressed dense indexes in a real run: one embedding pass feeds every compression, sizes are recorded, and a
full-depth re-scoring ranks as the float flat index does."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import copy_dataset, planned_jobs, serving_figures, snakemake, vector_size_decisions

pytestmark = pytest.mark.slow
MINI = Path("tests/fixtures/mini")
METHODS = {
    "dense": {"type": "dense", "encoder": "minilm"},
    "dense-d128": {"type": "dense", "encoder": "minilm", "index": {"kind": "flat", "dimensions": 128}},
    "dense-int8": {"type": "dense", "encoder": "minilm", "index": {"kind": "flat", "quantization": "int8"}},
    "dense-binary-rescored": {"type": "dense", "encoder": "minilm",
                              "index": {"kind": "flat", "quantization": "binary", "rescore": 100}},
    "dense-centered": {"type": "dense", "encoder": "minilm",
                       "index": {"kind": "flat", "quantization": "binary-centered"}},
    "dense-pq": {"type": "dense", "encoder": "minilm", "index": {"kind": "flat", "quantization": "pq", "pq_m": 48,
                                                                 "pq_nbits": 2}},
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path_factory.mktemp("compression"))
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["methods"] = METHODS
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = planned_jobs(workdir)
    # one embedding pass per (chunker, encoder), whatever the compressions; one index per compression
    assert jobs["embed_corpus"] == 1 and jobs["merge_embeddings"] == 1 and jobs["faiss_index"] == 6, jobs
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def test_every_compression_is_built_from_one_embedding_pass_and_records_its_size(workdir: Path) -> None:
    corpus = workdir / "results" / "mini" / "corpus" / "sections"
    assert len(list((corpus / "embeddings").glob("minilm*.npy"))) == 1
    stats = {path.stem: json.loads(path.read_text()) for path in (corpus / "faiss" / "minilm").glob("*.json")}
    assert set(stats) == {"flat", "flat-d128", "flat-int8", "flat-binary", "flat-binary-centered", "flat-pq48x2"}
    for name, record in stats.items():
        assert record["bytes"] == (corpus / "faiss" / "minilm" / f"{name}.faiss").stat().st_size
    assert stats["flat"]["dimensions"] == 384 and stats["flat-d128"]["dimensions"] == 128
    assert stats["flat-binary"]["bytes"] < stats["flat-int8"]["bytes"] < stats["flat"]["bytes"]
    # the centered codes carry their mean: one float32 a dimension more than the plain codes, and a header
    assert 0 < stats["flat-binary-centered"]["bytes"] - stats["flat-binary"]["bytes"] - 4 * 384 <= 64


def test_rescoring_deeper_than_the_corpus_ranks_as_flat(workdir: Path) -> None:
    runs = workdir / "results" / "mini" / "v1" / "runs"
    flat, rescored = (pd.read_parquet(runs / f"{name}.parquet") for name in ("dense", "dense-binary-rescored"))
    pd.testing.assert_frame_equal(rescored[["qid", "rank", "chunk_id"]], flat[["qid", "rank", "chunk_id"]])
    pd.testing.assert_series_equal(rescored["score"], flat["score"], rtol=1e-5)
    assert (workdir / "results" / "mini" / "v1" / "ann-recall" / "dense-int8.md").exists()


def test_a_binary_index_with_a_dimension_not_a_whole_byte_is_refused_at_start(workdir: Path) -> None:
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["methods"]["dense-bad"] = {"type": "dense", "encoder": "minilm",
                                      "index": {"kind": "flat", "dimensions": 100, "quantization": "binary"}}
    (workdir / "bad.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--dry-run", configfile="bad.yaml")
    assert result.returncode != 0
    output = result.stdout + result.stderr  # Snakemake prints an error while parsing on stdout
    assert "methods.dense-bad.index.dimensions: is 100; binary codes need a multiple of 8" in output


def test_the_vector_size_and_cost_pages_show_each_index_against_its_float_twin(workdir: Path) -> None:
    pages = workdir / "results" / "mini" / "v1"
    page = (pages / "vector-size.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| dense")]
    assert [row.split(" | ")[0] for row in rows] == ["| dense", "| dense-binary-rescored", "| dense-centered",
                                                     "| dense-d128", "| dense-int8", "| dense-pq"]
    assert all(" | dense | " in row for row in rows[1:]) and "(itself)" in rows[0]
    assert " | binary-centered | " in rows[2]
    assert "vector-size.html" in (workdir / "results" / "mini" / "index.html").read_text()


def test_the_recommendation_decides_the_index_size_on_the_run_tables(workdir: Path) -> None:
    box = (workdir / "results" / "mini" / "v1" / "recommended.md").read_text()
    assert box.count("**vector size (dense)**") == 1  # every compression of one float index is one decision
    # Re-scoring deeper than the corpus ranks exactly as float: the smaller index is chosen whatever δ.
    for margin in (0.0, 0.05):
        (decision,) = vector_size_decisions(workdir, "mini", "v1", "sections", margin, "document", k=5)
        assert [option.method for option in decision.options][-1] == "dense"  # float32 is the costliest
        assert decision.chosen is not None and decision.kept.method != "dense", decision


def test_the_cost_page_counts_what_each_index_serves_from_and_the_dimensions_it_searches(workdir: Path) -> None:
    """Before: int8 and binary indexes counted the float vectors they were built from, and a truncated index showed
    the encoder's 384 dimensions (issue 54)."""
    corpus = workdir / "results" / "mini" / "corpus" / "sections"
    page = (workdir / "results" / "mini" / "v1" / "cost.md").read_text()
    figures = serving_figures(page)
    faiss = {path.stem: path.stat().st_size / 1e6 for path in (corpus / "faiss" / "minilm").glob("*.faiss")}
    floats = (corpus / "embeddings" / "minilm.npy").stat().st_size / 1e6
    assert figures["dense-int8"]["MB in RAM"] == pytest.approx(faiss["flat-int8"], abs=1e-3)
    assert figures["dense"]["MB in RAM"] == pytest.approx(faiss["flat"], abs=1e-3)  # not the float vectors twice
    assert figures["dense-pq"]["MB in RAM"] == pytest.approx(faiss["flat-pq48x2"], abs=1e-3)
    # a re-scoring binary index reads the float vectors too: its codes and them, in memory and on disk
    assert figures["dense-binary-rescored"]["MB on disk"] == pytest.approx(faiss["flat-binary"] + floats, abs=2e-3)
    assert {method: figures[method]["dimensions"] for method in METHODS} == {
        "dense": 384, "dense-d128": 128, "dense-int8": 384, "dense-binary-rescored": 384, "dense-pq": 384,
        "dense-centered": 384}
    # the vector-size page shows the same megabytes
    sizes = (workdir / "results" / "mini" / "v1" / "vector-size.md").read_text()
    assert f"| {figures['dense-int8']['MB in RAM']:,.3f} |" in next(
        line for line in sizes.splitlines() if line.startswith("| dense-int8 "))
