"""Diff two question-set versions: question changes, metrics on each and on common questions, flips, rankings."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

from rankbench.analysis.qset_diff import (
    diff_summary,
    flips,
    question_changes,
    version_metrics,
)
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.qset_diff import diff_markdown


def main(snakemake):
    p, i = snakemake.params, snakemake.input
    metrics_a = {m: pd.read_parquet(path) for m, path in zip(p.methods, i.metrics_a)}
    metrics_b = {m: pd.read_parquet(path) for m, path in zip(p.methods, i.metrics_b)}
    changes = question_changes(pd.read_parquet(i.questions_a), pd.read_parquet(i.labels_a),
                               pd.read_parquet(i.questions_b), pd.read_parquet(i.labels_b))
    headline = [tuple(item) for item in p.headline]
    table = version_metrics(metrics_a, metrics_b, p.grain, headline)
    flipped = flips(metrics_a, metrics_b, p.grain, p.ks)
    summary = diff_summary(changes, table, flipped, json.loads(Path(i.manifest_a).read_text()),
                           json.loads(Path(i.manifest_b).read_text()), headline)
    page = diff_markdown(summary, changes, table, flipped, p.grain)
    write_parquet(changes, snakemake.output.changes)
    write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", snakemake.output.summary)
    page = draft_banner(p.drafts) + page
    write_text(markdown_html(page, f"diff {snakemake.wildcards.a} vs {snakemake.wildcards.b}"), snakemake.output.html)
    write_text(page, snakemake.output.markdown)


run_script(main, snakemake)
