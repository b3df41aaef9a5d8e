"""The robustness page of one question-set version: does the verdict survive perturbed or missing labels?"""

import pandas as pd

from rankbench.files import write_parquet, write_text
from rankbench.pages import markdown_html
from rankbench.robustness import BOUNDS_COLUMNS, SURVIVAL_COLUMNS, robustness, robustness_page
from rankbench.scripting import run_script


def main(snakemake):
    p, qset = snakemake.params, snakemake.wildcards.qset
    # methods scored at the report's grain only (external runs rank documents: no chunk grain)
    scored = [(m, run, qrels) for m, run, qrels in zip(p.methods, snakemake.input.runs, snakemake.input.qrels)
              if p.grain in p.grains[m]]
    runs = {method: pd.read_parquet(path) for method, path, _ in scored}
    qrels = {method: pd.read_parquet(path) for method, _, path in scored}
    survival, bounds = robustness(runs, qrels, p.grain, [tuple(item) for item in p.headline], p.baseline, p.alpha,
                                  p.relevance_threshold, p.gain, p.seed)
    survival = survival.assign(dataset=p.dataset, qset=qset)[SURVIVAL_COLUMNS]
    bounds = bounds.assign(dataset=p.dataset, qset=qset)[BOUNDS_COLUMNS]
    page = robustness_page(survival, bounds, p.dataset, qset)
    write_parquet(survival, snakemake.output.survival)
    write_parquet(bounds, snakemake.output.bounds)
    write_text(markdown_html(page, f"robustness {qset}"), snakemake.output.html)
    write_text(page, snakemake.output.markdown)


run_script(main, snakemake)
