"""Draw the figures of one question-set version: recall@k curves, a metric with CIs, per-kind heatmap, grade by rank."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.evaluation.metric_names import metric_label
from rankbench.execution.scripting import run_script
from rankbench.report.plots import (
    kind_heatmap,
    mean_grade_by_rank,
    metric_bars,
    recall_curves,
    save,
)


def main(snakemake):
    aggregate = pd.read_parquet(snakemake.input.aggregate)
    grades = {method: pd.read_parquet(path) for method, path in zip(snakemake.params.methods, snakemake.input.grades)}
    grain, qset, out = snakemake.params.grain, snakemake.wildcards.qset, snakemake.output
    metric, k = snakemake.params.plot_metric
    heat_metric, heat_k = snakemake.params.headline[0]
    baseline = snakemake.params.baseline
    save(recall_curves(aggregate, grain, f"recall@k by method — {qset}", baseline), out.recall_png, out.recall_svg)
    save(metric_bars(aggregate, grain, metric, k, f"{metric_label(metric, k)} with 95% CI — {qset}"),
         out.bars_png, out.bars_svg)
    heat_title = f"{metric_label(heat_metric, heat_k)} by question kind — {qset}"
    save(kind_heatmap(aggregate, grain, heat_metric, heat_k, heat_title), out.kinds_png, out.kinds_svg)
    save(mean_grade_by_rank(grades, grain, f"Mean relevance grade by rank — {qset}", baseline), out.grades_png,
         out.grades_svg)


run_script(main, snakemake)
