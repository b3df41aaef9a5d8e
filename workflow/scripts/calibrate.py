"""Abstention calibration of one question-set version: top-1 scores of answerable vs unanswerable questions."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.analysis.calibration import question_zones, thresholds, top1_scores, zone_table
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.calibration import calibration_markdown
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.plots import save, top1_distributions


def main(snakemake):
    p, qset = snakemake.params, snakemake.wildcards.qset
    # Only the top-1 rows: one per question and method, however deep and many the runs.
    runs = {method: pd.read_parquet(path, columns=["qid", "rank", "score"], filters=[("rank", "==", 1)])
            for method, path in zip(p.methods, snakemake.input.runs)}
    questions, labels = pd.read_parquet(snakemake.input.questions), pd.read_parquet(snakemake.input.labels)
    answerable = set(labels.loc[labels["grade"] >= p.relevance_threshold, "qid"])
    top1 = top1_scores(runs, questions, answerable)
    table = thresholds(top1)
    # hit@k (k the largest evaluated) of each answerable question, for the methods with abstention zones.
    hits = pd.concat([pd.read_parquet(path).query("grain == @p.grain and metric == 'hit' and k == @p.k")
                      .assign(method=method)[["method", "qid", "value"]].rename(columns={"value": "hit"})
                      for method, path in zip(p.methods, snakemake.input.metrics) if method in p.zones]
                     + [pd.DataFrame(columns=["method", "qid", "hit"])], ignore_index=True)
    per_question = question_zones(top1, p.zones, hits)
    zones = zone_table(per_question, p.zones)
    page = calibration_markdown(top1, table, qset, zones, p.k)
    save(top1_distributions(top1, f"Top-1 score: answerable vs unanswerable — {qset}"), snakemake.output.png,
         snakemake.output.svg)
    write_parquet(top1, snakemake.output.top1)
    write_parquet(table, snakemake.output.thresholds)
    write_parquet(per_question, snakemake.output.question_zones)
    write_parquet(zones, snakemake.output.zone_table)
    page = draft_banner(p.drafts) + page
    write_text(markdown_html(page, f"calibration {qset}"), snakemake.output.html)
    write_text(page, snakemake.output.markdown)


run_script(main, snakemake)
