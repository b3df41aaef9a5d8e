"""The study across datasets: its table (Markdown, HTML, LaTeX, CSV, tidy Parquet), the pooled statistics and a
forest plot per headline metric, from each dataset's aggregate and per-question metrics."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import os

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.pages import markdown_html
from rankbench.report.plots import save
from rankbench.report.study import (
    dataset_effects,
    forest_plot,
    pooled_table,
    study_cells,
    study_csv,
    study_latex,
    study_markdown,
)


def main(snakemake):
    plan, out = snakemake.params.plan, snakemake.output
    columns = plan["columns"]
    aggregates = {c["label"]: pd.read_parquet(path) for c, path in zip(columns, snakemake.input.aggregates)}
    keys = [(c["label"], method) for c in columns for method in c["methods"]]
    per_query = {key: pd.read_parquet(path) for key, path in zip(keys, snakemake.input.metrics)}
    cells = study_cells(plan, aggregates)
    pooled, effects = pooled_table(plan, dataset_effects(plan, per_query))
    figures = {}
    for metric, k in plan["metrics"]:
        png, svg = out[f"forest_{metric}_{k}_png"], out[f"forest_{metric}_{k}_svg"]
        save(forest_plot(effects, pooled, plan, metric, k), png, svg)
        figures[(metric, k)] = os.path.relpath(png, os.path.dirname(out.md))
    markdown = study_markdown(cells, pooled, plan, figures)
    write_text(markdown, out.md)
    write_text(markdown_html(markdown, f"Study: {plan['name']}"), out.html)
    write_text(study_latex(cells, pooled, plan), out.tex)
    write_text(study_csv(cells, pooled, plan), out.csv)
    write_parquet(cells, out.cells)
    write_parquet(effects, out.effects)
    write_parquet(pooled, out.pooled)


run_script(main, snakemake)
