"""A study across datasets: the study file checked at start, and one real run over two tiny datasets whose table,
pooled statistics and incremental behaviour are checked against each dataset's own results and statsmodels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from statsmodels.stats.meta_analysis import combine_effects
from workflow_helpers import REPO, planned_jobs, snakemake

from rankbench.errors import InputError
from rankbench.project.study import MemberView, read_members, study_plan

SCHEMA = yaml.safe_load((REPO / "workflow/schemas/study.schema.yaml").read_text())
TINY = Path("tests/fixtures/beir-tiny")
MINI = Path("tests/fixtures/mini")


def view(dataset: str, methods: dict[str, str], baseline: str = "bm25", qsets=("test",), ks=(1, 10)) -> MemberView:
    return MemberView(source=f"{dataset}.yaml", dataset=dataset, results=f"results/{dataset}", qsets=list(qsets),
                      method_types=methods, evaluation={"baseline": baseline, "ks": list(ks), "metrics": []})


def study_config(**changes: Any) -> dict[str, Any]:
    study = {"name": "s", "datasets": {"a": {"config": "a.yaml"}, "b": {"config": "b.yaml"}},
             "methods": {"BM25": "bm25", "RM3": {"a": "rm3", "b": {"skip": "not configured"}}},
             "baseline": "BM25", "metrics": ["ndcg@10"]}
    return {"study": {**study, **changes}}


VIEWS = {"a": view("a", {"bm25": "bm25", "rm3": "bm25"}), "b": view("b", {"bm25": "bm25", "dense": "dense"})}


def test_a_study_plan_names_each_cell_file_and_the_reason_a_method_is_missing() -> None:
    plan = study_plan(study_config(), "study.yaml", VIEWS)
    a, b = plan["columns"]
    assert a["aggregate"] == "results/a/test/aggregate.parquet"
    assert a["metrics"] == {"BM25": "results/a/test/metrics/bm25.parquet", "RM3": "results/a/test/metrics/rm3.parquet"}
    assert b["methods"] == {"BM25": "bm25"} and b["skipped"] == {"RM3": "not configured"}
    assert plan["metrics"] == [["ndcg", 10]] and plan["alpha"] == 0.05 and plan["grain"] == "document"


@pytest.mark.parametrize("config, views, where, problem", [
    (study_config(methods={"BM25": "bm25", "RM3": {"a": "rm3"}}), VIEWS, "study.methods.RM3",
     "names no method for dataset column 'b'"),
    (study_config(methods={"BM25": "bm25", "RM3": "rm3"}), VIEWS, "study.methods.RM3",
     "names 'rm3', which b.yaml does not configure"),
    (study_config(methods={"BM25": "bm25", "RM3": {"a": "rm3", "b": "bm25", "c": "x"}}), VIEWS, "study.methods",
     "'c', which is not under study.datasets"),
    (study_config(baseline="RM3"), VIEWS, "study.methods.RM3", "the study baseline is 'rm3' on a"),
    (study_config(baseline="X"), VIEWS, "study.baseline", "'X' is not under study.methods"),
    (study_config(metrics=["ndcg@20"]), VIEWS, "study.metrics", "ndcg@20 is not computed on a"),
    (study_config(metrics=["bogus@10"]), VIEWS, "study.metrics", "cannot read metric"),
    (study_config(name="a"), VIEWS, "study.name", "'a' is also a dataset of the study"),
    (study_config(), {**VIEWS, "b": view("b", {"bm25": "bm25"}, qsets=("v1", "v2"))}, "study.datasets.b",
     "has several question-set versions (v1, v2)"),
    (study_config(datasets={"a": {"config": "a.yaml", "qset": "v9"}, "b": {"config": "b.yaml"}}), VIEWS,
     "study.datasets.a.qset", "'v9' is not a version of a.yaml"),
])
def test_study_mistakes_name_the_file_and_key(config, views, where: str, problem: str) -> None:
    with pytest.raises(InputError) as error:
        study_plan(config, "study.yaml", views)
    assert error.value.path == "study.yaml" and error.value.where == where, str(error.value)
    assert problem in str(error.value)


def test_study_files_are_checked_before_any_dataset_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"study.datasets.a.config: names 'a.yaml', which is not a file"):
        read_members(study_config(), SCHEMA, "study.yaml")
    with pytest.raises(InputError, match=r"study\.datasets: .*does not have enough properties"):
        read_members(study_config(datasets={"a": {"config": "a.yaml"}}), SCHEMA, "study.yaml")
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("dataset: {name: same, format: beir, path: x}\n")
    with pytest.raises(InputError, match=r"b.yaml and a.yaml both configure dataset 'same'"):
        read_members(study_config(), SCHEMA, "study.yaml")
    members = read_members(study_config(datasets={"a": {"config": "a.yaml", "qset": "x"},
                                                  "a again": {"config": "a.yaml", "qset": "y"}}),
                           SCHEMA, "study.yaml")
    assert members["a"] is members["a again"] and members["a"].prefix == "same_"


def _id_order_run(corpus: Path, doc_key: str, queries: Path, qid_key: str, run: Path) -> None:
    """A TREC run that ranks every document by id, for every question."""
    docs = sorted(json.loads(line)[doc_key] for line in corpus.read_text().splitlines() if line.strip())
    qids = [json.loads(line)[qid_key] for line in queries.read_text().splitlines() if line.strip()]
    run.write_text("".join(f"{qid} Q0 {doc} {rank} {len(docs) - rank} id-order\n"
                           for qid in qids for rank, doc in enumerate(docs, 1)))


def _write(path: Path, config: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path.name


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny study, run to completion."""
    workdir = write_tiny_study(tmp_path_factory.mktemp("study"))
    result = snakemake(workdir, "--cores", "2", configfile="study.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def write_tiny_study(workdir: Path) -> Path:
    """Two tiny datasets (BEIR and native; BM25 and an imported run: seconds) and a study over them."""
    for folder in (TINY, MINI):
        shutil.copytree(REPO / folder, workdir / folder)
    tiny = yaml.safe_load((REPO / TINY / "config.yaml").read_text())
    # BM25 variants rank these tiny corpora alike; a run in document-id order differs from BM25 on both datasets.
    (workdir / "runs").mkdir()
    _id_order_run(workdir / TINY / "corpus.jsonl", "_id", workdir / TINY / "queries.jsonl", "_id",
                  workdir / "runs/tiny.trec")
    _id_order_run(workdir / MINI / "corpus.jsonl", "doc_id", workdir / MINI / "questions/v1.jsonl", "qid",
                  workdir / "runs/mini.trec")
    tiny["methods"]["id-order"] = {"type": "external", "path": "runs/tiny.trec", "format": "trec"}
    _write(workdir / "tiny.yaml", tiny)
    _write(workdir / "tiny2.yaml", {**tiny, "dataset": {**tiny["dataset"], "name": "tiny2"}})
    mini = yaml.safe_load((REPO / MINI / "config.yaml").read_text())
    mini["methods"] = {"bm25": {"type": "bm25"},
                       "id-order": {"type": "external", "path": "runs/mini.trec", "format": "trec"}}
    mini.pop("encoders")
    mini["evaluation"].update(baseline="bm25", ks=[1, 3, 5, 10])
    _write(workdir / "mini.yaml", mini)
    study = {"name": "tiny-study",
             "datasets": {"BEIR tiny": {"config": "tiny.yaml", "qset": "test"}, "mini": {"config": "mini.yaml"}},
             "methods": {"BM25": "bm25", "ID order": "id-order",
                         "RM3": {"BEIR tiny": "bm25-rm3", "mini": {"skip": "not configured"}}},
             "baseline": "BM25", "metrics": ["ndcg@10", "rr@10"]}
    _write(workdir / "study.yaml", {"study": study})
    return workdir


@pytest.mark.slow
def test_the_study_table_shows_each_datasets_aggregate(tiny_study: Path) -> None:
    cells = pd.read_parquet(tiny_study / "results/tiny-study/study.parquet")
    folders = {"BEIR tiny": "results/beir-tiny/test", "mini": "results/mini/v1"}
    shown = cells[cells["mean"].notna()]
    assert len(shown) == 2 * (3 + 2) and set(shown["column"]) == set(folders)
    for column, folder in folders.items():
        aggregate = pd.read_parquet(tiny_study / folder / "aggregate.parquet")
        aggregate = aggregate[(aggregate["grain"] == "document") & (aggregate["kind"] == "all")]
        merged = shown[shown["column"] == column].merge(
            aggregate, left_on=["dataset_method", "metric", "k"], right_on=["method", "metric", "k"],
            suffixes=("", "_aggregate"))
        assert len(merged) == len(shown[shown["column"] == column])
        assert (merged["mean"] == merged["mean_aggregate"]).all()
        assert (merged["n"] == merged["n_aggregate"]).all()
        assert merged["p_holm"].equals(merged["p_holm_aggregate"])
    skipped = cells[cells["mean"].isna()]
    assert list(zip(skipped["column"], skipped["method"], skipped["skipped"])) == [
        ("mini", "RM3", "not configured")] * 2
    page = (tiny_study / "results/tiny-study/study.md").read_text()
    assert "RM3 on mini (–): not configured" in page
    tex = (tiny_study / "results/tiny-study/study.tex").read_text()
    assert r"\toprule" in tex and r"\multicolumn{4}{c}{nDCG@10}" in tex
    for name in ("forest-ndcg@10.png", "forest-ndcg@10.svg", "forest-rr@10.png"):
        assert (tiny_study / "results/tiny-study/plots" / name).stat().st_size > 1000


def test_a_studys_jobs_run_in_its_job_worker_as_a_run_of_each_dataset_alone(tiny_study: Path) -> None:
    """The study run starts the job workers (a module's own hooks are not the run's) and its datasets' rules declare
    their scripts as in a run of each alone: the study's table and each dataset's evaluations ran in the worker,
    whose measure of each job ends its log."""
    worker_line = "rankbench job worker: the job took"
    assert worker_line in (tiny_study / "logs/tiny-study/study_table.log").read_text()
    for dataset in ("beir-tiny", "mini"):
        logs = sorted((tiny_study / "logs" / dataset).rglob("*.log"))
        evaluations = [log for log in logs if "evaluate" in str(log.relative_to(tiny_study / "logs" / dataset))]
        assert evaluations and all(worker_line in log.read_text() for log in evaluations), dataset


@pytest.mark.slow
def test_the_pooled_difference_equals_statsmodels_over_each_datasets_paired_differences(tiny_study: Path) -> None:
    effects = pd.read_parquet(tiny_study / "results/tiny-study/effects.parquet")
    pooled = pd.read_parquet(tiny_study / "results/tiny-study/pooled.parquet")
    folders = {"BEIR tiny": "results/beir-tiny/test", "mini": "results/mini/v1"}
    names = {"RM3": "bm25-rm3", "ID order": "id-order"}
    for _, row in effects.iterrows():  # each dataset's difference is its own aggregate's, over the same questions
        aggregate = pd.read_parquet(tiny_study / folders[row["column"]] / "aggregate.parquet")
        own = aggregate[(aggregate["grain"] == "document") & (aggregate["kind"] == "all")
                        & (aggregate["metric"] == row["metric"]) & (aggregate["k"] == row["k"])
                        & (aggregate["method"] == names[row["method"]])].iloc[0]
        assert row["diff"] == pytest.approx(own["diff"], abs=1e-12)
        assert row["n"] == own["n"]
    order = pooled[pooled["method"] == "ID order"]
    assert set(order["datasets"]) == {2} and (order["note"] == "").all(), order
    for _, row in order.iterrows():
        rows = effects[(effects["method"] == row["method"]) & (effects["metric"] == row["metric"])
                       & (effects["k"] == row["k"])]
        reference = combine_effects(rows["diff"].to_numpy(), rows["variance"].to_numpy(), method_re="dl")
        frame = reference.summary_frame()
        which = "random effect" if reference.tau2 >= 0 else "fixed effect"  # DL truncates tau² at 0
        assert row["diff"] == pytest.approx(frame.loc[which, "eff"], rel=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((frame.loc[which, "ci_low"],
                                                                 frame.loc[which, "ci_upp"]), rel=1e-9)
        assert row["tau2"] == pytest.approx(max(reference.tau2, 0.0), abs=1e-15)
        assert row["q"] == pytest.approx(reference.q, rel=1e-12)
        assert rows["weight"].sum() == pytest.approx(1.0)
    rm3 = pooled[pooled["method"] == "RM3"]
    assert rm3["diff"].isna().all() and (rm3["note"] == "runs on fewer than two datasets").all()


@pytest.mark.slow
def test_a_study_reuses_and_adds_only_what_it_must(tiny_study: Path) -> None:
    assert planned_jobs(tiny_study, "study.yaml") == {}
    # Each dataset's results are those of its config run alone, both ways.
    assert planned_jobs(tiny_study, "tiny.yaml") == {} and planned_jobs(tiny_study, "mini.yaml") == {}
    study = yaml.safe_load((tiny_study / "study.yaml").read_text())
    study["study"]["metrics"] = ["ndcg@10"]
    _write(tiny_study / "fewer-metrics.yaml", study)
    assert planned_jobs(tiny_study, "fewer-metrics.yaml") == {"study_table": 1, "all": 1}
    study["study"]["datasets"]["tiny2"] = {"config": "tiny2.yaml", "qset": "test"}
    study["study"]["methods"]["RM3"]["tiny2"] = "bm25-rm3"
    _write(tiny_study / "three.yaml", study)
    added = planned_jobs(tiny_study, "three.yaml")
    assert added.pop("study_table") == 1 and added.pop("all") == 1
    assert added and all(rule.startswith("tiny2_") for rule in added), added
    alone = planned_jobs(tiny_study, "tiny2.yaml")
    assert ({rule.removeprefix("tiny2_"): n for rule, n in added.items()}
            == {r: n for r, n in alone.items() if r != "all"})


@pytest.mark.slow
def test_a_bad_study_fails_at_start_with_the_key(tmp_path: Path) -> None:
    workdir = write_tiny_study(tmp_path)
    study = yaml.safe_load((workdir / "study.yaml").read_text())
    study["study"]["methods"]["ID order"] = "bm25-rm4"
    _write(workdir / "bad.yaml", study)
    result = snakemake(workdir, "--dry-run", configfile="bad.yaml")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert ("bad.yaml, study.methods.ID order: names 'bm25-rm4', which tiny.yaml does not configure (its methods: "
            "bm25, bm25-rm3, id-order). Map the study method") in output, output[-2000:]
    assert "Traceback" not in output and not (workdir / "results").exists()


def test_paired_values_line_up_by_question() -> None:
    from rankbench.report.study import dataset_effects

    def frame(values: dict[str, float]) -> pd.DataFrame:
        return pd.DataFrame({"qid": list(values), "kind": "all", "grain": "document", "metric": "ndcg", "k": 10,
                             "value": list(values.values())})

    plan = {"baseline": "A", "methods": ["A", "B"], "grain": "document", "metrics": [["ndcg", 10]],
            "columns": [{"label": "x", "methods": {"A": "a", "B": "b"}}]}
    per_query = {("x", "A"): frame({"q1": 0.0, "q2": 1.0, "q3": 0.5, "q4": np.nan}),
                 ("x", "B"): frame({"q3": 1.0, "q2": 1.0, "q1": 1.0, "q4": 1.0})}
    effect = dataset_effects(plan, per_query).iloc[0]
    assert effect["n"] == 3 and effect["diff"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)


def test_the_forest_plot_is_byte_identical_run_to_run(tmp_path: Path) -> None:
    from rankbench.report.plots import save
    from rankbench.report.study import forest_plot, pooled_table

    plan = {"name": "s", "baseline": "A", "methods": ["A", "B"], "grain": "document", "metrics": [["ndcg", 10]],
            "columns": [{"label": "x"}, {"label": "y"}, {"label": "z"}]}
    effects = pd.DataFrame({"column": ["x", "y", "z"], "method": "B", "metric": "ndcg", "k": 10,
                            "diff": [0.02, -0.01, 0.05], "variance": [1e-4, 2e-4, 4e-4], "se": 0.01,
                            "ci_low": [0.0, -0.03, 0.01], "ci_high": [0.04, 0.01, 0.09], "n": 50, "weight": np.nan})
    pooled, weighted = pooled_table(plan, effects)
    assert weighted["weight"].sum() == pytest.approx(1.0)
    texts = []
    for run in range(2):
        save(forest_plot(weighted, pooled, plan, "ndcg", 10), tmp_path / f"{run}.png", tmp_path / f"{run}.svg")
        texts.append(((tmp_path / f"{run}.svg").read_bytes(), (tmp_path / f"{run}.png").read_bytes()))
    assert texts[0] == texts[1]


def test_a_column_of_a_draft_version_is_marked_on_the_study_page() -> None:
    """Before: a study over a draft version read like one over frozen versions."""
    from dataclasses import replace

    from rankbench.report.study import pooled_table, study_markdown

    def page(views: dict[str, MemberView]) -> tuple[dict, str]:
        plan = study_plan(study_config(), "study.yaml", views)
        cells = pd.DataFrame([
            {"study": "s", "column": c["label"], "dataset": c["dataset"], "qset": c["qset"], "method": m,
             "dataset_method": c["methods"].get(m), "grain": "document", "metric": "ndcg", "k": 10,
             "mean": 0.5 if m in c["methods"] else np.nan, "ci_low": 0.4, "ci_high": 0.6, "n": 10,
             "baseline": "bm25", "diff": 0.0, "p_holm": 1.0, "significant": "", "near": False, "best": False,
             "skipped": c["skipped"].get(m)} for c in plan["columns"] for m in plan["methods"]]).astype({"n": "Int64"})
        effects = pd.DataFrame({"column": ["a"], "method": "RM3", "metric": "ndcg", "k": 10, "diff": [0.01],
                                "variance": [1e-4], "se": 0.01, "ci_low": [-0.01], "ci_high": [0.03], "n": 10,
                                "weight": np.nan})
        pooled, _ = pooled_table(plan, effects)
        return plan, study_markdown(cells, pooled, plan, {("ndcg", 10): "plots/forest-ndcg@10.png"})

    plan, drafted = page({**VIEWS, "a": replace(VIEWS["a"], drafts=["test"])})
    assert [column["draft"] for column in plan["columns"]] == [True, False]
    assert ("**DRAFT**: a (a test) is made from a draft question-set version, not frozen: its questions and labels "
            "may still change, and so may these numbers.") in drafted
    assert "| a | a | test (draft) |" in drafted and "| b | b | test |" in drafted
    plan, frozen = page(VIEWS)
    assert not any(column["draft"] for column in plan["columns"]) and "draft" not in frozen.lower()
