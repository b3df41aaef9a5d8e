"""The real workflow on a copy of the demo: outputs, incremental behaviour, and metrics against pytrec_eval."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
import yaml
from workflow_helpers import edit_config, planned_jobs, snakemake

from rankbench.configuration.config import expand_chunkers, expand_methods, method_chunker
from rankbench.io.frozen import freeze
from rankbench.io.ranked_lists import collapse_to_documents

pytestmark = pytest.mark.slow
CORPUS_RULES = {"load_corpus", "chunk", "bm25_index", "embed_corpus", "faiss_index"}
QUESTION_RULES = {"prepare_questions", "prepare_rewrites", "embed_queries", "embed_rewritten_queries"}


def demo_config(workdir: Path) -> dict:
    return yaml.safe_load((workdir / "config.yaml").read_text())


def demo_methods(workdir: Path) -> list[str]:
    """The demo's concrete methods (grids expanded into their points)."""
    return list(expand_methods(demo_config(workdir)["methods"], "config.yaml"))


def test_every_method_and_version_has_runs_metrics_and_a_table(demo: Path) -> None:
    config = demo_config(demo)
    for qset in config["qsets"]:
        base = demo / "results" / "demo" / qset
        for method in demo_methods(demo):
            run = pd.read_parquet(base / "runs" / f"{method}.parquet")
            assert {"qid", "rank", "chunk_id", "doc_id", "score"} <= set(run.columns)
            assert run.groupby("qid")["rank"].apply(lambda r: list(r) == list(range(1, len(r) + 1))).all()
            assert run.groupby("qid").size().max() <= config["evaluation"]["depth"]
        aggregate = pd.read_parquet(base / "aggregate.parquet")
        assert {"dataset", "qset", "method", "grain", "metric", "k", "mean", "n"} <= set(aggregate.columns)
        assert set(aggregate["method"]) == set(demo_methods(demo))
        assert set(aggregate["grain"]) == {"chunk", "document"}
        manifest = json.loads((base / "qset.json").read_text())
        table = (base / "comparison.md").read_text()
        assert manifest["sha256"] in table and f"question-set version {qset}" in table
        for method in demo_methods(demo):
            assert f"| {method} |" in table


def test_a_complete_run_leaves_nothing_to_do(demo: Path) -> None:
    assert planned_jobs(demo) == {}


def reversed_mappings(value):
    """Every mapping's keys in reverse order, all the way down (lists as they are)."""
    if isinstance(value, dict):
        return {key: reversed_mappings(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_mappings(item) for item in value]
    return value


def test_the_same_config_with_its_keys_in_another_order_reruns_nothing(demo: Path) -> None:
    """Every mapping of the config written in reverse key order (bm25-rm3's `prf`, the HNSW `index`, encoders,
    methods, ...): no params change and no job. Before, `prf` alone reran bm25-rm3 and 28 jobs downstream."""
    def reverse(config: dict) -> None:
        reordered = reversed_mappings(config)
        config.clear()
        config.update(reordered)

    config = edit_config(demo, reverse, "config-reversed.yaml")
    reversed_config = yaml.safe_load((demo / config).read_text())
    assert list(reversed_config["methods"]["bm25-rm3"]["prf"]) == ["original_weight", "fb_terms", "fb_docs"]
    dry_run = snakemake(demo, "--dry-run", configfile=config)
    assert dry_run.returncode == 0, dry_run.stderr[-2000:]
    assert "Params have changed" not in dry_run.stdout + dry_run.stderr
    assert planned_jobs(demo, config) == {}


def test_a_new_question_set_version_schedules_only_question_side_jobs(demo: Path) -> None:
    questions = demo / "data" / "demo" / "questions"
    extra = {"qid": "q999", "question": "Quel est le délai de remboursement ?", "kind": "answerable",
             "audience": "public", "as_of": "2025-06-01", "labels": []}
    (questions / "v4.jsonl").write_text((questions / "v2.jsonl").read_text() + json.dumps(extra) + "\n")
    freeze(questions / "v4.jsonl", "v4", questions / "frozen.lock")
    # Methods using the `llm` rewrites need them for every version: v4 brings its own, frozen with it.
    rewrite = {"qid": "q999", "query": "délai de remboursement"}
    (questions / "v4.rewrites.keywords.jsonl").write_text(
        (questions / "v2.rewrites.keywords.jsonl").read_text() + json.dumps(rewrite, ensure_ascii=False) + "\n")
    freeze(questions / "v4.rewrites.keywords.jsonl", "v4.rewrites.keywords", questions / "frozen.lock")
    config = edit_config(demo, lambda c: c["qsets"].update(v4={
        "path": "data/demo/questions/v4.jsonl",
        "rewrites": {"keywords": "data/demo/questions/v4.rewrites.keywords.jsonl"}}),
                         "config-v4.yaml")
    jobs = planned_jobs(demo, config)
    assert not CORPUS_RULES & set(jobs), jobs
    assert jobs["prepare_questions"] == 1 and jobs["prepare_rewrites"] == 1 and jobs["validate_labels"] == 1
    assert jobs["embed_queries"] == len(demo_config(demo)["encoders"])
    assert jobs["aggregate"] == 1 and jobs["comparison_table"] == 1
    # Each encoder encodes only the new question: the other 58 come from the content cache, as they were.
    encoders = sorted(demo_config(demo)["encoders"])
    targets = [f"results/demo/v4/query-embeddings/{encoder}.npy" for encoder in encoders]
    result = snakemake(demo, "--cores", "2", *targets, configfile=config)
    assert result.returncode == 0, result.stderr[-3000:]
    for encoder in encoders:
        assert "encoded 1 of 59 questions, 58 from the cache" in (
            demo / "logs" / "demo" / "embed_queries" / "v4" / f"{encoder}.log").read_text()
        np.testing.assert_allclose(np.load(demo / f"results/demo/v4/query-embeddings/{encoder}.npy")[:58],
                                   np.load(demo / f"results/demo/v2/query-embeddings/{encoder}.npy"), atol=1e-6, rtol=0)


_ENCODE_QUESTIONS_AT = """
import sys
import pandas as pd
from rankbench.execution.threads import limit_threads
limit_threads(int(sys.argv[1]))
from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder
encoder = load_encoder(encoder_spec({"kind": "sentence-transformers", "model": sys.argv[2]}))
sys.stdout.buffer.write(encoder.encode_queries(pd.read_parquet(sys.argv[3])["question"].tolist()).tobytes())
"""


def test_a_small_torch_question_job_books_one_thread_and_computes_on_two(demo: Path) -> None:
    """The demo's MiniLM question jobs (a few KB of questions) book one thread, so they run beside the corpus
    encodings, yet compute on QUESTION_ENCODING_THREADS: the vectors of the version encoded first are those of 2
    torch threads, which on these questions differ from 1 thread's (so a job computing on what it booked fails)."""
    import subprocess
    import sys

    from rankbench.retrieval.encoders.kinds import QUESTION_ENCODING_THREADS

    log = sorted((demo / ".snakemake" / "log").glob("*.log"))[0].read_text()  # the demo's own run
    jobs = [block for block in log.split("rule ")[1:] if block.startswith("embed_queries:")
            and "encoder=minilm" in block.split("[")[0]]
    assert len(jobs) == 3 and not any("threads:" in job.split("[")[0] for job in jobs)  # Snakemake omits 1 thread
    first = next(qset for qset in ("v1", "v2", "v3") if "0 from the cache" in (
        demo / "logs" / "demo" / "embed_queries" / qset / "minilm.log").read_text())
    model = demo_config(demo)["encoders"]["minilm"]["model"]
    vectors = {threads: subprocess.run([sys.executable, "-c", _ENCODE_QUESTIONS_AT, str(threads), model,
                                        f"results/demo/{first}/questions.parquet"], cwd=demo, check=True,
                                       capture_output=True).stdout for threads in (1, QUESTION_ENCODING_THREADS)}
    stored = np.load(demo / "results" / "demo" / first / "query-embeddings" / "minilm.npy")
    assert stored.tobytes() == vectors[QUESTION_ENCODING_THREADS]
    assert stored.tobytes() != vectors[1]


def test_editing_a_corpus_document_reembeds_no_question(demo: Path, tmp_path: Path) -> None:
    workdir = shutil.copytree(demo, tmp_path / "demo", symlinks=True)
    corpus = workdir / "data" / "demo" / "corpus.jsonl"
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    record = json.loads(lines[0])
    record["text"] += "\n\nUne phrase ajoutée."
    corpus.write_text(json.dumps(record, ensure_ascii=False) + "\n" + "".join(lines[1:]), encoding="utf-8")
    jobs = planned_jobs(workdir)
    assert not QUESTION_RULES & set(jobs), jobs
    assert jobs["embed_corpus"] == len(demo_config(demo)["encoders"])
    # the labels are checked against the edited corpus before anything is scored with them
    n_qsets, chunkers = len(demo_config(demo)["qsets"]), expand_chunkers(demo_config(demo)["chunkers"], "config.yaml")
    assert jobs["validate_labels"] == n_qsets and jobs["qrels"] == n_qsets * len(chunkers)  # labels per chunker


def test_changing_a_fusion_parameter_reruns_only_the_fusion_and_what_consumes_it(demo: Path) -> None:
    config = edit_config(demo, lambda c: c["methods"]["combsum"].update(normalization="zscore"), "config-z.yaml")
    n_qsets = len(demo_config(demo)["qsets"])
    assert planned_jobs(demo, config) == {"fuse": n_qsets, "evaluate": n_qsets, "aggregate": n_qsets,
                                          "comparison_table": n_qsets, "breakdowns_page": n_qsets,
                                          "cost_page": n_qsets, "serve_probe": 1, "history_record": n_qsets,
                                          "draw_plots": n_qsets, "failure_analysis": n_qsets,
                                          "calibrate": n_qsets, "explorer": n_qsets, "record_run": n_qsets,
                                          "diff_qsets": len(demo_config(demo)["diffs"]), "record_history": 1,
                                          "plan_budget": n_qsets, "robustness": n_qsets, "index_page": 1,
                                          "recommend": n_qsets, "all": 1}


def test_changing_an_evaluation_key_rescores_every_run_and_retrieves_nothing(demo: Path) -> None:
    """`evaluation.gain`: each run's evaluate job (its TREC files and leak counts, made in the same job, come out
    identical) and what reads the metrics; no corpus, question or retrieval job, and no qrels job."""
    config = edit_config(demo, lambda c: c["evaluation"].update(gain="exponential"), "config-gain.yaml")
    jobs = planned_jobs(demo, config)
    n_qsets = len(demo_config(demo)["qsets"])
    assert jobs["evaluate"] == n_qsets * len(demo_methods(demo))
    assert jobs["aggregate"] == jobs["robustness"] == jobs["comparison_table"] == n_qsets
    retrieval = {"retrieve_bm25", "retrieve_dense", "fuse", "rerank", "merge_embeddings", "qrels", "validate_labels"}
    assert not (CORPUS_RULES | QUESTION_RULES | retrieval) & set(jobs), jobs


def test_query_embeddings_are_computed_once_per_version_and_encoder(demo: Path) -> None:
    config = demo_config(demo)
    result = snakemake(demo, "--dry-run", "--forceall", "--quiet", "rules")
    counts = dict(line.split() for line in result.stdout.splitlines()
                  if line.strip().startswith(("embed_queries ", "retrieve_dense ", "rerank ")))
    users_of_e5 = [m for m, spec in config["methods"].items()
                   if spec.get("encoder") == "e5" or spec.get("scorer", {}).get("encoder") == "e5"]
    assert len(users_of_e5) >= 2, "the demo should share one query encoding between several methods"
    assert int(counts["embed_queries"]) == len(config["qsets"]) * len(config["encoders"])


def _trec(frame: pd.DataFrame, item: str) -> dict:
    """pytrec_eval's run dict with scores that encode our ranks (the order pytrec_eval must score)."""
    run: dict = {}
    for qid, item_id, rank in zip(frame["qid"], frame[item], frame["rank"]):
        run.setdefault(qid, {})[item_id] = -float(rank)
    return run


@pytest.mark.parametrize("qset", ["v1", "v2"])
def test_demo_metrics_equal_pytrec_eval(demo: Path, qset: str) -> None:
    base = demo / "results" / "demo" / qset
    config = demo_config(demo)
    expanded = {**config, "methods": expand_methods(config["methods"], "config.yaml")}
    measures = {"ndcg_cut_10": ("ndcg", 10), "P_5": ("precision", 5), "recall_10": ("recall", 10),
                "success_1": ("hit", 1), "map_cut_10": ("ap", 10)}
    for method in demo_methods(demo):
        # Each method is scored on the labels of its own chunker (the demo ranks section and window chunks).
        qrels_all = pd.read_parquet(base / "qrels" / f"{method_chunker(expanded, method, 'config.yaml')}.parquet")
        run = pd.read_parquet(base / "runs" / f"{method}.parquet")
        ours = pd.read_parquet(base / "metrics" / f"{method}.parquet")
        for grain, frame, item in (("chunk", run, "chunk_id"),
                                   ("document", collapse_to_documents(run), "doc_id")):
            grain_qrels = qrels_all[qrels_all["grain"] == grain]
            qrels: dict = {}
            for qid, item_id, grade in zip(grain_qrels["qid"], grain_qrels["item_id"], grain_qrels["grade"]):
                qrels.setdefault(qid, {})[item_id] = int(grade)
            relevant = {q for q, items in qrels.items() if max(items.values()) >= 1}
            reference = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(_trec(frame, item))
            mine = ours[ours["grain"] == grain].set_index(["qid", "metric", "k"])["value"]
            assert set(mine.index.get_level_values("qid")) == relevant
            for qid in relevant:
                for measure, (metric, k) in measures.items():
                    expected = reference.get(qid, {}).get(measure, 0.0)
                    assert mine[(qid, metric, k)] == pytest.approx(expected, abs=1e-9), (method, grain, qid, measure)


def test_every_table_reports_leaks_for_every_method(demo: Path) -> None:
    for qset in demo_config(demo)["qsets"]:
        base = demo / "results" / "demo" / qset
        leaks = pd.read_parquet(base / "leaks.parquet")
        section = (base / "comparison.md").read_text().split("## Leaks", 1)[1].split("## Findings", 1)[0]
        for method in demo_methods(demo):
            row = next(line for line in section.splitlines() if line.startswith(f"| {method} |"))
            staff = leaks[(leaks["method"] == method) & (leaks["leak"] == "staff") & (leaks["k"] == 10)].iloc[0]
            assert f"{staff['n_with_leak']}/{staff['n_questions']}" in row
        filtered = [m for m, spec in demo_config(demo)["methods"].items() if "audience" in spec.get("filters", [])]
        unfiltered = leaks[(leaks["leak"] == "staff") & ~leaks["method"].isin(filtered)]
        assert filtered and unfiltered["n_with_leak"].max() > 0
        assert (leaks[(leaks["leak"] == "staff") & leaks["method"].isin(filtered)]["n_with_leak"] == 0).all()
