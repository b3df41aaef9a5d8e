"""The robustness page of one question-set version: does the verdict survive perturbed or missing labels?"""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

from pathlib import Path

import pandas as pd

from rankbench.analysis.robustness import (
    BOUNDS_COLUMNS,
    CORRECTED_COLUMNS,
    CORRECTED_TYPES,
    SURVIVAL_COLUMNS,
    judge_effects,
    robustness,
)
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.robustness import robustness_page


def main(snakemake):
    p, qset = snakemake.params, snakemake.wildcards.qset
    # methods scored at the report's grain only (external runs rank documents: no chunk grain)
    scored = [(m, run, qrels) for m, run, qrels in zip(p.methods, snakemake.input.runs, snakemake.input.qrels)
              if p.grain in p.grains[m]]
    runs = {method: pd.read_parquet(path) for method, path, _ in scored}
    qrels = {method: pd.read_parquet(path) for method, _, path in scored}
    survival, bounds = robustness(runs, qrels, p.grain, [tuple(item) for item in p.headline], p.baseline, p.alpha,
                                  p.relevance_threshold, p.gain, p.seed)
    # the LLM judge's grades exist only once the `llm` target ran (a path in params, not an input)
    judgements = Path(p.judgements) if p.judgements else None
    corrected = None  # the page says "not applicable"; the Parquet is empty
    if judgements is not None and judgements.exists():
        swapped, corrected = judge_effects(runs, qrels, pd.read_parquet(judgements), p.grain,
                                           [tuple(item) for item in p.headline], p.baseline, p.alpha,
                                           p.relevance_threshold, p.gain, p.seed)
        survival = pd.concat([survival, swapped], ignore_index=True)
        corrected = corrected.assign(dataset=p.dataset, qset=qset)[CORRECTED_COLUMNS].astype(CORRECTED_TYPES)
    survival = survival.assign(dataset=p.dataset, qset=qset)[SURVIVAL_COLUMNS]
    bounds = bounds.assign(dataset=p.dataset, qset=qset)[BOUNDS_COLUMNS]
    page = robustness_page(survival, bounds, p.dataset, qset, corrected)
    write_parquet(corrected if corrected is not None else pd.DataFrame(columns=CORRECTED_COLUMNS).astype(
        CORRECTED_TYPES), snakemake.output.corrected)
    write_parquet(survival, snakemake.output.survival)
    write_parquet(bounds, snakemake.output.bounds)
    page = draft_banner(p.drafts) + page
    write_text(markdown_html(page, f"robustness {qset}"), snakemake.output.html)
    write_text(page, snakemake.output.markdown)


run_script(main, snakemake)
