"""Per-query metrics of one run at its grains, and the share of each grade at each rank."""

import pandas as pd

from rankbench.evaluation import evaluate_run, grade_distribution
from rankbench.files import write_parquet
from rankbench.scripting import run_script


def main(snakemake):
    run, questions = pd.read_parquet(snakemake.input.run), pd.read_parquet(snakemake.input.questions)
    qrels, params = pd.read_parquet(snakemake.input.qrels), snakemake.params
    per_query = evaluate_run(run, questions, qrels, params.ks, relevance_threshold=params.relevance_threshold,
                             gain=params.gain, grains=params.grains)
    grades = grade_distribution(run, questions, qrels, max(params.ks),
                                relevance_threshold=params.relevance_threshold, grains=params.grains)
    write_parquet(grades, snakemake.output.grades)
    write_parquet(per_query, snakemake.output.metrics)


run_script(main, snakemake)
