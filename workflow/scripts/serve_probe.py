"""The serving probe of every question-set version: each method's query path loaded once (start-up), then each
version's seeded sample of questions answered one at a time with no cache (a question another version asked the
same way is not timed again), then the same questions as one batch; a method the probe cannot run gets the
latencies its run recorded. Writes each version's serving.parquet (the machine in its metadata)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import os

# Before anything imports numba (a BM25 method's numba backend does): its kernels come compiled from the cache.
os.environ["NUMBA_CACHE_DIR"] = snakemake.params.numba_cache

import logging
from pathlib import Path

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.execution.threads import limit_threads
from rankbench.io.files import write_parquet
from rankbench.records.footprint import footprint, read_spends
from rankbench.records.serving import (
    machine,
    probe_count,
    probe_sample,
    recorded_seconds,
    serving_row,
    serving_table,
    with_footprint,
)
from rankbench.records.timing import read_timing
from rankbench.retrieval.registry import hook, method_type
from rankbench.retrieval.serving import STEP_CPU, Probe, ServeSetup


def version_rows(p, qset, questions, shared):
    """One version's serving rows and its table's metadata: the probed methods timed on its seeded sample (through the
    probe shared by the versions), the others from the latencies their runs recorded."""
    threads = p.cost["probe_threads"]
    n = probe_count(p.cost, len(questions), p.quick)
    order = probe_sample(questions["qid"].astype(str).tolist(), n, p.seed)
    sample = questions.set_index(questions["qid"].astype(str)).loc[order].reset_index(drop=True)
    setups, plans = p.versions[qset]["setups"], {}

    def plan(method):
        if method not in plans:
            upstream = {name: plan(name) for name in p.inputs[method]}
            plans[method] = hook(method_type(p.specs[method]).serve)(ServeSetup(
                method, p.specs[method], setups[method]["inputs"], setups[method]["params"], sample, p.depth,
                upstream))
        return plans[method]

    for method in setups:
        plan(method)
    timed = shared.run({m: plans[m] for m in setups}, n)
    rows = [serving_row(m, timed[m].seconds, timed[m].batch_s, timed[m].startup_s, threads, "probe", p.seed)
            for m in timed]
    for method, paths in p.versions[qset]["recorded"].items():
        if method in timed:
            continue
        records = [read_timing(path) for path in paths]
        startup = sum(sum(record.get("once", {}).values()) for record in records) if records else float("nan")
        rows.append(serving_row(method, recorded_seconds(records, order), float("nan"), startup, threads, "recorded",
                                p.seed))
    metadata = {"machine": {**machine(), "threads": threads}, "questions": len(questions),
                "asked": p.cost["probe_questions"], "timed": n, "quick": p.quick, "probe": p.cost["probe"]}
    return rows, metadata


def main(snakemake):
    p = snakemake.params
    limit_threads(p.cost["probe_threads"])
    shared = Probe()
    load_before = os.getloadavg()[0]
    logging.disable(logging.INFO)  # no progress line per question: a service logs none, and it would be timed
    try:
        tables = [version_rows(p, Path(path).parent.name, pd.read_parquet(path), shared)
                  for path in snakemake.input.questions]
    finally:
        logging.disable(logging.NOTSET)
    logging.info("CPU s per step: %s", ", ".join(f"{key} {cpu:.2f}" for key, cpu in
                                                 sorted(STEP_CPU.items(), key=lambda item: -item[1])))
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    for (rows, metadata), path in zip(tables, snakemake.output.serving):
        qset = Path(path).parent.name
        served = footprint(p.served, read_spends(p.priced_records[qset]), p.prices)
        write_parquet(with_footprint(serving_table(rows), served), path, metadata={**metadata, "load": load})
        logging.info("%s: %d methods, %d of %d questions timed", path, len(rows), metadata["timed"],
                     metadata["questions"])


run_script(main, snakemake)
