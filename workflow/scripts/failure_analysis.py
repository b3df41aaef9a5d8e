"""Failures of every method on one question-set version, classified for multi-stage methods, and the stage log."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.analysis.failures import analyse, stage_log
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.failures import failures_markdown
from rankbench.report.pages import draft_banner, markdown_html


def main(snakemake):
    p = snakemake.params
    runs = {method: pd.read_parquet(path) for method, path in zip(p.methods, snakemake.input.runs)}
    qrels = {method: pd.read_parquet(path) for method, path in zip(p.methods, snakemake.input.qrels)}
    questions, labels = pd.read_parquet(snakemake.input.questions), pd.read_parquet(snakemake.input.labels)
    documents = pd.read_parquet(snakemake.input.documents, columns=["doc_id", "title"])  # not the corpus's text
    titles = documents.set_index("doc_id")["title"]  # a Series: its index is hashed once for every lookup
    failures = analyse(runs, p.specs, qrels, questions, labels, titles, p.grain, p.k, p.relevance_threshold)
    relevant = labels[labels["grade"] >= p.relevance_threshold]
    evaluated = int(questions["qid"].isin(relevant["qid"]).sum())
    page = failures_markdown(failures, p.specs, p.grain, p.k, evaluated, snakemake.wildcards.qset)
    write_parquet(failures, snakemake.output.failures)
    write_parquet(stage_log(runs, p.specs, titles, p.k), snakemake.output.stages)
    page = draft_banner(p.drafts) + page
    write_text(markdown_html(page, f"failures {snakemake.wildcards.qset}"), snakemake.output.html)
    write_text(page, snakemake.output.markdown)


run_script(main, snakemake)
