"""Start-of-run checks through the real Snakefile: bad data and edited frozen files stop every run (dry runs
included) before any job, whatever Snakemake would schedule and whatever exists under results/."""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from workflow_helpers import REPO, copy_dataset, snakemake

from rankbench.errors import InputError
from rankbench.io.files import write_parquet, write_text
from rankbench.io.frozen import content_hash, freeze, read_lock
from rankbench.io.loaders import SCHEMA_FOLDER, load_corpus
from rankbench.project.start_checks import check_dataset_records, corpus_record

MINI = Path("tests/fixtures/mini")


def mini_copy(workdir: Path, rewrites: bool = False) -> Path:
    """The six-document fixture with BM25 only (and, if asked, a BM25 over frozen keyword rewrites)."""
    copy_dataset(MINI / "config.yaml", [MINI], workdir)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["methods"] = {"bm25": {"type": "bm25"}}
    config["evaluation"]["bootstrap_resamples"] = 100
    if rewrites:
        folder = workdir / MINI / "questions"
        lines = [json.loads(line) for line in (folder / "v1.jsonl").read_text().splitlines()]
        path = folder / "v1.rewrites.kw.jsonl"
        path.write_text("".join(json.dumps({"qid": r["qid"], "query": r["question"].lower()}) + "\n" for r in lines))
        freeze(path, "v1.rewrites.kw", folder / "frozen.lock")
        config["qsets"]["v1"]["rewrites"] = {"kw": str(MINI / "questions" / "v1.rewrites.kw.jsonl")}
        config["methods"]["bm25-kw"] = {"type": "bm25", "rewrite": "kw"}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir


def failure(workdir: Path, *args: str) -> str:
    """The output of a run that must fail, with no job started."""
    result = snakemake(workdir, "--cores", "1", *args)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-2000:]
    assert "rule " not in output, "a job ran before the check"
    return output


@pytest.mark.slow
def test_an_edited_frozen_file_fails_every_run_whatever_snakemake_schedules(tmp_path: Path) -> None:
    workdir = mini_copy(tmp_path, rewrites=True)
    assert snakemake(workdir, "--cores", "1").returncode == 0
    version = workdir / MINI / "questions" / "v1.jsonl"
    rewrites = workdir / MINI / "questions" / "v1.rewrites.kw.jsonl"
    lock = workdir / MINI / "questions" / "frozen.lock"
    original, stat = version.read_bytes(), version.stat()
    assert (workdir / "results/mini/v1/rewrites/.kw.frozen-sha256").read_text().strip() == content_hash([rewrites])
    corpus = workdir / MINI / "corpus.jsonl"
    assert (workdir / "results/mini/corpus/.corpus-sha256").read_text().strip() == content_hash([corpus])

    # A tampered version fails, and fails again on the second try (the failed job used to delete its outputs
    # while downstream outputs remained, and the second run found nothing to do), dry runs included.
    version.write_bytes(original.replace(b'"grade": 1', b'"grade": 2', 1))
    for args in ((), (), ("--dry-run",)):
        err = failure(workdir, *args)
        assert "v1.jsonl, version 'v1': changed after it was frozen" in err and "new version" in err

    # An edit with its modification time restored: Snakemake sees nothing, the hash does.
    version.write_bytes(original.replace(b"bike", b"bika", 1))
    os.utime(version, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "changed after it was frozen" in failure(workdir)

    version.write_bytes(original)
    os.utime(version, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert snakemake(workdir, "--cores", "1").returncode == 0

    # Rewrites are frozen like versions: editing the file and its lock entry together is refused by the record
    # of what the results were made from.
    rewrites.write_text(rewrites.read_text().replace("bike", "bicycle"))
    lock.write_text(lock.read_text().replace(read_lock(lock)["v1.rewrites.kw"], content_hash([rewrites])))
    err = failure(workdir)
    assert ".kw.frozen-sha256, version 'v1.rewrites.kw': results were made from content sha256" in err


def write_version(workdir: Path, records: list[dict[str, object]]) -> None:
    """Replace v1 by these records and register them, so only the content can fail."""
    folder = workdir / MINI / "questions"
    (folder / "v1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "frozen.lock").write_text("{}\n")
    freeze(folder / "v1.jsonl", "v1", folder / "frozen.lock")


def edit_corpus(workdir: Path, line: int, **fields: object) -> None:
    path = workdir / MINI / "corpus.jsonl"
    records = [json.loads(text) for text in path.read_text().splitlines()]
    records[line - 1].update(fields)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


QUESTION = {"qid": "q1", "question": "How many days?", "labels": [{"doc_id": "returns-2025", "grade": 1}]}
CASES = {
    "fractional grade": (lambda w: write_version(w, [QUESTION, {**QUESTION, "qid": "q2", "labels": [
        {"doc_id": "returns-2025", "grade": 2.5}]}]), ["v1.jsonl, line 2 (qid 'q2')", "grade 2.5 is not an integer"]),
    "qid with a blank": (lambda w: write_version(w, [{**QUESTION, "qid": "q 1"}]),
                         ["v1.jsonl, line 1", "qid 'q 1' is empty or contains whitespace"]),
    "kind with a pipe": (lambda w: write_version(w, [{**QUESTION, "kind": "a|b"}]),
                         ["v1.jsonl, line 1", "kind 'a|b' cannot name a table row"]),
    "label on a missing section": (lambda w: write_version(w, [{**QUESTION, "labels": [
        {"doc_id": "returns-2025", "section": "nope", "grade": 1}]}]), ["v1.jsonl", "section 'nope'"]),
    "doc_id with a blank": (lambda w: edit_corpus(w, 2, doc_id="returns 2025"),
                            ["corpus.jsonl, line 2", "doc_id 'returns 2025' is empty or contains whitespace"]),
    "headings only": (lambda w: [edit_corpus(w, n, text=f"## Heading {n}", title="") for n in range(1, 7)],
                      ["corpus.jsonl, chunker 'sections': yields no chunk", "under its headings"]),
    "one unanswerable question": (lambda w: write_version(w, [{**QUESTION, "labels": []}]),
                                  ["v1.jsonl: has no question with a relevant label", "nothing to evaluate"]),
}


GRADED = [QUESTION, {**QUESTION, "qid": "q2", "labels": [{"doc_id": "delivery", "grade": 2000}]}]
# Version records and evaluation settings the evaluate jobs cannot score: refused at start, naming file and line.
UNEVALUABLE = {
    "one unanswerable question": ([{**QUESTION, "labels": []}], {}, None, "has no question with a relevant label"),
    "only non-relevant grades": ([{**QUESTION, "labels": [{"doc_id": "returns-2025", "grade": 0}]}], {}, None,
                                 "(grade >= 1, evaluation.relevance_threshold): there is nothing to evaluate"),
    "nothing reaches the threshold": ([QUESTION], {"relevance_threshold": 2}, None, "(grade >= 2"),
    "grade 2000, exponential gain": (GRADED, {"gain": "exponential"}, "line 2",
                                     "'delivery' with grade 2000, above the 1023 that evaluation.gain: exponential"),
    "grade 2000 and ERR": (GRADED, {"metrics": ["err"]}, "line 2", "above the 4 that ERR"),
}


@pytest.mark.parametrize("case", sorted(UNEVALUABLE))
def test_a_version_the_evaluation_cannot_score_is_refused_at_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """Before: every retrieval job ran, then aggregate failed (`KeyError: 'n'`), or evaluate refused the grade."""
    records, settings, where, problem = UNEVALUABLE[case]
    workdir = mini_copy(tmp_path)
    write_version(workdir, records)
    monkeypatch.chdir(workdir)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["evaluation"].update(settings)
    with pytest.raises(InputError) as error:
        check_dataset_records(config, SCHEMA_FOLDER, "results/mini")
    assert (Path(error.value.path), error.value.where) == (MINI / "questions" / "v1.jsonl", where), str(error.value)
    assert problem in str(error.value)
    config["evaluation"].update(relevance_threshold=1, gain="linear", metrics=[])
    if case.startswith("grade"):
        check_dataset_records(config, SCHEMA_FOLDER, "results/mini")


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_data_stops_a_dry_run_before_any_job(tmp_path: Path, case: str) -> None:
    workdir = mini_copy(tmp_path)
    mutate, expected = CASES[case]
    mutate(workdir)
    err = failure(workdir, "--dry-run")
    for fragment in expected:
        assert fragment in err, (fragment, err[-2000:])
    assert not (workdir / "results").exists()


def test_an_unchanged_corpus_is_read_from_its_checked_documents_and_a_changed_one_is_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = mini_copy(tmp_path)
    monkeypatch.chdir(workdir)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    schemas = Path(__file__).resolve().parents[2] / "workflow" / "schemas"
    corpus = MINI / "corpus.jsonl"
    documents = Path("results/mini/corpus/documents.parquet")
    write_parquet(load_corpus(corpus, yaml.safe_load((schemas / "corpus.schema.yaml").read_text())), documents)
    original = corpus.read_bytes()
    # A record of other content than the corpus's: the corpus is parsed, and its bad line is found.
    corpus.write_bytes(original + b'{"doc_id": "bad id", "text": "x"}\n')
    write_text(content_hash([MINI / "questions" / "v1.jsonl"]) + "\n", corpus_record(documents))
    with pytest.raises(InputError, match=r"corpus\.jsonl, line 7 .*'bad id'"):
        check_dataset_records(config, schemas, "results/mini")
    # The record matches: the documents loaded (and checked) from this very content are read, not the JSON
    # (shown here with a corpus whose record was forged: its bad line goes unparsed).
    write_text(content_hash([corpus]) + "\n", corpus_record(documents))
    check_dataset_records(config, schemas, "results/mini")


def run_job_script(name: str, log: Path, **sections: dict[str, object]) -> None:
    """Run a workflow script as Snakemake would, with a stand-in `snakemake` object."""
    fake = SimpleNamespace(log=[str(log)], threads=1,
                           **{key: SimpleNamespace(**value) for key, value in sections.items()})
    runpy.run_path(str(REPO / "workflow" / "scripts" / name), init_globals={"snakemake": fake})


def test_the_jobs_keep_their_own_frozen_guards_as_a_second_line(tmp_path: Path) -> None:
    # Executors that re-parse the Snakefile per job skip the start checks there; the jobs check again.
    workdir = mini_copy(tmp_path, rewrites=True)
    folder, schemas = workdir / MINI / "questions", REPO / "workflow" / "schemas"
    lock, version, rewrites = folder / "frozen.lock", folder / "v1.jsonl", folder / "v1.rewrites.kw.jsonl"
    documents = tmp_path / "documents.parquet"
    write_parquet(load_corpus(workdir / MINI / "corpus.jsonl",
                              yaml.safe_load((schemas / "corpus.schema.yaml").read_text())), documents)
    out = tmp_path / "results" / "v1"
    outputs = {"questions": out / "questions.parquet", "labels": out / "labels.parquet",
               "manifest": out / "qset.json", "validation": out / "validation.md"}
    version.write_bytes(version.read_bytes().replace(b'"grade": 1', b'"grade": 2', 1))
    with pytest.raises(SystemExit) as exit_info:
        run_job_script("prepare_questions.py", tmp_path / "q.log", wildcards={"qset": "v1"},
                       input={"files": [str(version)], "documents": str(documents),
                              "schema": str(schemas / "questions.schema.yaml")},
                       params={"format": "native", "source": {}, "lock": str(lock)},  # the job reads the lock
                       output={key: str(path) for key, path in outputs.items()})
    assert exit_info.value.code == 1 and "changed after it was frozen" in (tmp_path / "q.log").read_text()
    assert not any(path.exists() for path in outputs.values())

    questions = pd.DataFrame({"qid": [f"q{n}" for n in range(1, 7)], "question": ["x"] * 6})
    write_parquet(questions, outputs["questions"])

    def prepare_rewrites() -> None:
        run_job_script("prepare_rewrites.py", tmp_path / "r.log", wildcards={"qset": "v1", "rewrite": "kw"},
                       input={"rewrites": str(rewrites), "questions": str(outputs["questions"])},
                       params={"lock_key": "v1.rewrites.kw", "expected_sha256": read_lock(lock)["v1.rewrites.kw"],
                               "lock": str(lock)},
                       output={"queries": str(out / "rewrites" / "kw.parquet")})

    prepare_rewrites()
    assert (out / "rewrites" / ".kw.frozen-sha256").read_text().strip() == content_hash([rewrites])
    rewrites.write_text(rewrites.read_text().replace("bike", "bicycle"))
    lock.write_text(lock.read_text().replace(read_lock(lock)["v1.rewrites.kw"], content_hash([rewrites])))
    with pytest.raises(SystemExit):
        prepare_rewrites()
    assert "results were made from content sha256" in (tmp_path / "r.log").read_text()
