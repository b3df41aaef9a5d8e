"""The serving probe of one question-set version: each method's query path loaded once (start-up), then a seeded
sample of the questions answered one at a time with no cache, then the same questions as one batch; a method the
probe cannot run gets the latencies its run recorded. Writes serving.parquet (the machine in its metadata)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__, models=True)  # in the run's model worker, its encoders' libraries loaded

import os

# Before anything imports numba (a BM25 method's numba backend does): its kernels come compiled from the cache.
os.environ["NUMBA_CACHE_DIR"] = snakemake.params.numba_cache

import logging

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.execution.threads import limit_threads
from rankbench.io.files import write_parquet
from rankbench.records.serving import machine, probe_count, probe_sample, recorded_seconds, serving_row, serving_table
from rankbench.records.timing import read_timing
from rankbench.retrieval.registry import hook, method_type
from rankbench.retrieval.serving import ServeSetup, probe


def main(snakemake):
    p = snakemake.params
    threads = limit_threads(p.cost["probe_threads"])
    questions = pd.read_parquet(snakemake.input.questions)
    n = probe_count(p.cost, len(questions), p.quick)
    order = probe_sample(questions["qid"].astype(str).tolist(), n, p.seed)
    sample = questions.set_index(questions["qid"].astype(str)).loc[order].reset_index(drop=True)
    plans = {}

    def plan(method):
        if method not in plans:
            setup = p.setups[method]
            upstream = {name: plan(name) for name in p.inputs[method]}
            plans[method] = hook(method_type(p.specs[method]).serve)(ServeSetup(
                method, p.specs[method], setup["inputs"], setup["params"], sample, p.depth, upstream))
        return plans[method]

    for method in p.setups:
        plan(method)
    logging.disable(logging.INFO)  # no progress line per question: a service logs none, and it would be timed
    try:
        timed = probe({m: plans[m] for m in p.setups}, n)
    finally:
        logging.disable(logging.NOTSET)
    rows = [serving_row(m, timed[m].seconds, timed[m].batch_s, timed[m].startup_s, threads, "probe", p.seed)
            for m in p.setups]
    for method, paths in p.recorded.items():
        records = [read_timing(path) for path in paths]
        seconds = recorded_seconds(records, order)
        startup = sum(sum(record.get("once", {}).values()) for record in records)
        rows.append(serving_row(method, seconds, float("nan"), startup if records else float("nan"), threads,
                                "recorded", p.seed))
    logging.info("probed %d methods on %d of %d questions, %d from recorded latencies", len(p.setups), n,
                 len(questions), len(p.recorded))
    metadata = {"machine": {**machine(), "threads": threads}, "questions": len(questions), "asked": p.cost[
        "probe_questions"], "timed": n, "quick": p.quick, "probe": p.cost["probe"]}
    write_parquet(serving_table(rows), snakemake.output.serving, metadata=metadata)


run_script(main, snakemake)
