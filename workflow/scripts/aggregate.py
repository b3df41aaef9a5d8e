"""The tidy aggregate of one question-set version (one row per method, grain, kind, metric, k), the pairs (every
pair at the headline and margin metrics, the pairs with the baseline elsewhere), the
tiers and rank intervals of the headline metrics, the same per tag and per difficulty (breakdowns), the leak
summary (method × leak type × k: mean leaked chunks per question and questions with at least one leak), and the
evidence-grain aggregate (evidence.parquet: the same means, CIs and Holm-corrected tests against the baseline, over
the questions whose labels carry evidence)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.analysis.leaks import leak_summary
from rankbench.evaluation.scoring import AGGREGATE_COLUMNS, TIERS_COLUMNS, aggregate, breakdown_aggregate, tier_table
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet


def main(snakemake):
    params = snakemake.params
    per_query = {method: pd.read_parquet(path) for method, path in zip(params.methods, snakemake.input.metrics)}
    questions = pd.read_parquet(snakemake.input.questions)
    margins = {(metric, int(k)): delta for metric, k, delta in params.margins}
    # every pair where a page or a decision reads pairs (headline: tiers, findings, "What to do", marks; margins:
    # the frontier); elsewhere the pairs with the baseline (the tables' marks), so the pairs grow with the methods
    # times the few metrics read, not with every metric
    decided = {(metric, int(k)) for metric, k in params.headline} | set(margins)
    table, pairs = aggregate(per_query, questions, params.dataset, snakemake.wildcards.qset,
                             n_resamples=params.resamples, seed=params.seed, baseline=params.baseline,
                             margins=margins, every_pair=decided)
    tiers = tier_table(per_query, table, pairs, [tuple(item) for item in params.headline], params.alpha,
                       n_resamples=params.resamples, seed=params.seed)
    tiers = tiers.assign(dataset=params.dataset, qset=snakemake.wildcards.qset)[TIERS_COLUMNS]
    write_parquet(tiers, snakemake.output.tiers)
    write_parquet(pairs, snakemake.output.pairs)
    write_parquet(table, snakemake.output.aggregate)
    write_parquet(breakdown_aggregate(per_query, questions, params.dataset, snakemake.wildcards.qset,
                                      n_resamples=params.resamples, seed=params.seed, baseline=params.baseline),
                  snakemake.output.breakdowns)
    evidence = {method: frame for method, path in zip(params.chunk_methods, snakemake.input.evidence, strict=True)
                if len(frame := pd.read_parquet(path))}
    write_parquet(aggregate(evidence, questions, params.dataset, snakemake.wildcards.qset, n_resamples=params.resamples,
                            seed=params.seed, baseline=params.baseline, every_pair=())[0] if evidence
                  else pd.DataFrame(columns=AGGREGATE_COLUMNS), snakemake.output.evidence)
    leaks = {method: pd.read_parquet(path) for method, path in zip(params.methods, snakemake.input.leaks)}
    write_parquet(leak_summary(leaks), snakemake.output.leaks)


run_script(main, snakemake)
