"""`format: ir_datasets`: ir_datasets' own code reads a cache laid out here from BEIR files (no network), and the
workflow gives the same figures as the BEIR-folder config on the same data."""

from __future__ import annotations

import json
import os
import subprocess
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import REPO, SNAKEMAKE, planned_jobs, shared_dataset, snakemake

from rankbench.configuration.config import check_config
from rankbench.errors import InputError
from rankbench.io.ir_datasets_source import check_same_docs, load_ir_documents, load_ir_questions
from rankbench.io.loaders import load_beir_corpus, load_beir_questions

TINY = REPO / "tests" / "fixtures" / "beir-tiny"
SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
SCIFACT = shared_dataset("scifact")


def lay_out_scifact(beir: Path, home: Path, splits: dict[str, str]) -> None:
    """Put a BEIR folder where ir_datasets keeps beir/scifact: its download, scifact.zip, at <home>/beir/scifact/
    source.zip, holding scifact/corpus.jsonl, scifact/queries.jsonl and scifact/qrels/<split>.tsv (split: file)."""
    target = home / "beir" / "scifact" / "source.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w") as archive:
        for name in ("corpus.jsonl", "queries.jsonl"):
            archive.write(beir / name, f"scifact/{name}")
        for split, source in splits.items():
            archive.write(beir / "qrels" / source, f"scifact/qrels/{split}.tsv")


@pytest.fixture(scope="module")
def tiny_cache() -> Path:
    """beir-tiny as ir_datasets' beir/scifact (test: its test split, train: its odd split), in the tests' cache."""
    home = Path(os.environ["IR_DATASETS_HOME"])
    if not (home / "beir" / "scifact" / "source.zip").exists():
        lay_out_scifact(TINY, home, {"test": "test.tsv", "train": "odd.tsv"})
    return home


def test_documents_and_questions_equal_the_beir_loaders_on_the_same_files(tiny_cache: Path) -> None:
    documents = load_ir_documents("beir/scifact/test")
    expected = load_beir_corpus(TINY / "corpus.jsonl")
    columns = ["doc_id", "title", "text", "audience"]
    pd.testing.assert_frame_equal(documents[columns], expected[columns])
    for split, qrels in (("test", "test.tsv"), ("train", "odd.tsv")):
        questions, labels = load_ir_questions(f"beir/scifact/{split}")
        beir_questions, beir_labels = load_beir_questions(TINY / "queries.jsonl", TINY / "qrels" / qrels)
        pd.testing.assert_frame_equal(questions[["qid", "question"]], beir_questions[["qid", "question"]])
        pd.testing.assert_frame_equal(labels, beir_labels)
        assert set(questions["kind"]) == {"ir_datasets"}


def test_an_id_missing_from_the_cache_fails_at_once_naming_it_and_how_to_fetch_it(tiny_cache: Path) -> None:
    start = time.perf_counter()
    with pytest.raises(InputError) as error:
        load_ir_questions("beir/nfcorpus/test")
    assert time.perf_counter() - start < 5
    message = str(error.value)
    assert "ir_datasets 'beir/nfcorpus/test'" in message and "not in the ir_datasets cache" in message
    assert "nfcorpus.zip" in message and "ir_datasets.load('beir/nfcorpus/test')" in message


@pytest.mark.parametrize(("dataset_id", "parts", "problem"), [
    ("no/such/dataset", "docs", "is not a dataset id ir_datasets knows"),
    ("beir/scifact", "questions", "provides no qrels"),
])
def test_ids_that_cannot_serve_are_refused(tiny_cache: Path, dataset_id: str, parts: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        load_ir_documents(dataset_id) if parts == "docs" else load_ir_questions(dataset_id)


def test_a_version_over_other_documents_is_refused(tiny_cache: Path) -> None:
    check_same_docs("beir/scifact", "beir/scifact/train")
    with pytest.raises(InputError, match=r"judges the documents of 'beir/nfcorpus', not those of dataset.id"):
        check_same_docs("beir/scifact", "beir/nfcorpus/test")


def _ad_hoc(name: str, folder: Path, docs: str, queries: str, qrels: str) -> str:
    """Register an ad-hoc dataset in this process (ir_datasets' own create_dataset: TSV docs/queries, TREC qrels)."""
    import ir_datasets

    files = {"docs.tsv": docs, "queries.tsv": queries, "qrels.trec": qrels}
    for file, text in files.items():
        (folder / file).write_text(text)
    ir_datasets.registry.register(name, ir_datasets.create_dataset(
        docs_tsv=str(folder / "docs.tsv"), queries_tsv=str(folder / "queries.tsv"),
        qrels_trec=str(folder / "qrels.trec")))
    return name


def test_an_ad_hoc_dataset_loads_with_any_integer_grade(tmp_path: Path) -> None:
    name = _ad_hoc("rankbench-test/grades", tmp_path, "d1\tfirst\nd2\tsecond\n", "q1\tfirst?\nq2\tunjudged\n",
                   "q1 0 d1 4\nq1 0 d2 -1\n")
    documents = load_ir_documents(name)
    questions, labels = load_ir_questions(name)
    assert documents[["doc_id", "text"]].values.tolist() == [["d1", "first"], ["d2", "second"]]
    assert questions["qid"].tolist() == ["q1"]  # the queries its qrels judge, as for a BEIR split
    assert labels["grade"].tolist() == [4, -1]


@pytest.mark.parametrize(("qrels", "where", "problem"), [
    ("q1 0 d1 1\nq1 0 d2 99999999999\n", "record 2 (query 'q1', document 'd2')", "is not an integer"),
    ("q1 0 d1 1\nq1 0 d1 2\n", "record 1 (query 'q1', document 'd1') and record 2", "judge the same query"),
    ("q1 0 d1 1\nq9 0 d1 1\n", "query 'q9'", "judges 1 query id(s) its queries lack"),
    ("q1 0 d1 1\nq1 0 d2 2.5\n", "qrels record 2", "cannot be read by ir_datasets (ValueError"),
])
def test_bad_qrels_are_refused_at_load_naming_the_record(tmp_path: Path, qrels: str, where: str, problem: str) -> None:
    name = _ad_hoc(f"rankbench-test/bad-{abs(hash(qrels))}", tmp_path, "d1\ta\nd2\tb\n", "q1\tx\n", qrels)
    with pytest.raises(InputError) as error:
        load_ir_questions(name)
    assert f"ir_datasets {name!r} (" in str(error.value) and f"), {where}" in str(error.value)
    assert problem in str(error.value)


def _config(workdir: Path, dataset: dict, qsets: dict) -> None:
    config = yaml.safe_load((TINY / "config.yaml").read_text())
    config["dataset"] = dataset
    config["qsets"] = qsets
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.mark.slow
def test_offline_without_a_cache_the_run_fails_at_start_naming_the_id(tmp_path: Path) -> None:
    _config(tmp_path, {"name": "nf", "format": "ir_datasets", "id": "beir/nfcorpus", "language": "english"},
            {"test": {"split": "test"}})
    start = time.perf_counter()
    result = snakemake(tmp_path, "--dry-run")
    assert time.perf_counter() - start < 30
    assert result.returncode == 2
    assert "ir_datasets 'beir/nfcorpus'" in result.stderr and "not in the ir_datasets cache" in result.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("dataset", "qsets", "where", "problem"), [
    ({"format": "ir_datasets"}, {"test": {"split": "test"}}, "dataset.id", "needs `id`"),
    ({"format": "ir_datasets", "id": "beir/scifact"}, {"test": {"split": "test", "id": "beir/scifact/test"}},
     "qsets.test", "gives both `id` and `split`"),
    ({"format": "ir_datasets", "id": "beir/scifact"}, {"test": {}}, "qsets.test", "needs `id` or `split`"),
    ({"format": "ir_datasets", "id": "beir/scifact"}, {"test": {"split": "test", "topic_field": "desc"}},
     "qsets.test.topic_field", "is not read by a ir_datasets dataset"),
    ({"format": "beir", "path": str(TINY), "id": "beir/scifact"}, {"test": {"split": "test"}},
     "dataset.id", "is not read by a beir dataset"),
])
def test_config_keys_of_the_format_are_checked(dataset: dict, qsets: dict, where: str, problem: str) -> None:
    config = yaml.safe_load((TINY / "config.yaml").read_text())
    config.pop("diffs")
    config.update(dataset={"name": "x", "language": "english", **dataset}, qsets=qsets)
    with pytest.raises(InputError) as error:
        check_config(config, SCHEMA, "my.yaml")
    assert error.value.path == "my.yaml" and error.value.where == where, str(error.value)
    assert problem in str(error.value)


def _aggregate(workdir: Path, name: str, qset: str) -> pd.DataFrame:
    frame = pd.read_parquet(workdir / "results" / name / qset / "aggregate.parquet")
    keys = ["method", "grain", "metric", "k"]
    return frame[frame["kind"] == "all"].drop(columns="kind").sort_values(keys).reset_index(drop=True)


@pytest.mark.slow
def test_versions_named_by_split_and_by_id_plan_question_side_jobs_only(tmp_path: Path, tiny_cache: Path) -> None:
    """Two ids as two versions (beir/scifact/test by split, beir/scifact/train by id) over one corpus: the start
    checks read both through ir_datasets, and the plan loads the corpus once and each version once."""
    _config(tmp_path, {"name": "tiny", "format": "ir_datasets", "id": "beir/scifact", "language": "english"},
            {"test": {"split": "test"}, "odd": {"id": "beir/scifact/train"}})
    jobs = planned_jobs(tmp_path)
    assert jobs["load_corpus"] == 1 and jobs["prepare_questions"] == 2 and jobs["bm25_index"] == 1


@pytest.mark.slow
@pytest.mark.skipif(SCIFACT is None, reason="BEIR SciFact not found at ../shared/datasets/scifact")
def test_scifact_through_ir_datasets_gives_the_beir_folder_figures(tmp_path: Path) -> None:
    """beir/scifact/test read by ir_datasets from its own cache (laid out from the shared BEIR copy) scores BM25
    exactly as the BEIR-folder config on the same files: every metric, every cut-off, both grains."""
    home = tmp_path / "ir_datasets"
    lay_out_scifact(SCIFACT, home, {"test": "test.tsv", "train": "train.tsv"})
    runs = {}
    for name, dataset, qsets in (
            ("beir", {"format": "beir", "path": str(SCIFACT)}, {"test": {"split": "test"}}),
            ("irds", {"format": "ir_datasets", "id": "beir/scifact/test"}, {"test": {"id": "beir/scifact/test"}})):
        workdir = tmp_path / name
        workdir.mkdir()
        config = {"dataset": {"name": "scifact", "language": "english", **dataset}, "qsets": qsets,
                  "chunker": "whole", "chunkers": {"whole": {"kind": "sections", "size": None}},
                  "methods": {"bm25": {"type": "bm25", "k1": 0.9, "b": 0.4}},
                  "evaluation": {"depth": 100, "ks": [1, 10, 100], "bootstrap_resamples": 1000}}
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        command = SNAKEMAKE + ["-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(workdir), "--configfile",
                               str(workdir / "config.yaml"), "--cores", "2", "results/scifact/test/aggregate.parquet"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=900,
                                env={**os.environ, "IR_DATASETS_HOME": str(home)})
        assert result.returncode == 0, result.stderr[-3000:]
        runs[name] = _aggregate(workdir, "scifact", "test")
    pd.testing.assert_frame_equal(runs["irds"], runs["beir"])
    manifest = json.loads((tmp_path / "irds" / "results" / "scifact" / "test" / "qset.json").read_text())
    assert manifest["id"] == "beir/scifact/test" and manifest["files"] == [] and manifest["questions"] == 300
    ndcg = runs["irds"].query("grain == 'document' and metric == 'ndcg' and k == 10")["mean"].item()
    assert 0.6 < ndcg < 0.7 and (runs["irds"]["n"] == 300).all()
