"""Per-query metrics of one run at its grains, and the share of each grade at each rank; a run that matches no
label (empty, or foreign ids) is named in the log, as its zeros say nothing about its ranking."""

import logging

import pandas as pd

from rankbench.errors import InputError
from rankbench.evaluation.metrics import err_grade_problem
from rankbench.evaluation.scoring import dictionary_coded, evaluate_run, grade_distribution
from rankbench.io.files import write_parquet
from rankbench.io.runs import unmatched
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    run, questions = pd.read_parquet(snakemake.input.run), pd.read_parquet(snakemake.input.questions)
    qrels, params = pd.read_parquet(snakemake.input.qrels), snakemake.params
    if "err" in params.extra_metrics and err_grade_problem(qrels):
        raise InputError(snakemake.input.qrels, None, err_grade_problem(qrels),
                         "Remove err from evaluation.metrics, or use labels graded 0..4.")
    for grain in params.grains:
        problem = unmatched(run, qrels[qrels["grain"] == grain], "doc_id" if grain == "document" else "chunk_id")
        if problem:
            logging.warning("method %s, %s grain: the run %s; it scores 0 on every metric", snakemake.wildcards.method,
                            grain, problem)
    run, qrels = dictionary_coded(run, qrels)  # ids hashed once for every grain and metric below
    per_query = evaluate_run(run, questions, qrels, params.ks, relevance_threshold=params.relevance_threshold,
                             gain=params.gain, grains=params.grains, extra_metrics=params.extra_metrics,
                             rbp_p=params.rbp_p)
    grades = grade_distribution(run, questions, qrels, max(params.ks),
                                relevance_threshold=params.relevance_threshold, grains=params.grains)
    write_parquet(grades, snakemake.output.grades)
    write_parquet(per_query, snakemake.output.metrics)


run_script(main, snakemake)
