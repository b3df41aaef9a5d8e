"""Rank chunks for every question with one lucene method: Anserini's SearchCollection over the version's questions
(or their rewrites) as topics, its TREC run read back into rankbench's run (chunk and document ids), with the record
of what built the index (Anserini's version, jar sha256, Java) as the run's provenance."""

import json
import time
from pathlib import Path

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.ranked_lists import run_from_topk
from rankbench.records.timing import Timing
from rankbench.retrieval.lucene import Engine, analyzer_from_keys, search


def main(snakemake):
    timing = Timing()
    with timing.once("load"):
        questions = pd.read_parquet(snakemake.input.questions)
        texts = pd.read_parquet(snakemake.input.queries)["question"].tolist()
        chunks = pd.read_parquet(snakemake.input.chunks)
        engine_record = json.loads(Path(snakemake.input.engine).read_text())
    depth, qids = snakemake.params.depth, questions["qid"].tolist()
    start = time.perf_counter()
    positions, scores, loop_s = search(Engine(**snakemake.params.engine), snakemake.input.index, texts,
                                       snakemake.params.options, analyzer_from_keys(snakemake.params.analyzer), depth,
                                       snakemake.threads, snakemake.resources.mem_mb)
    wall_s = time.perf_counter() - start
    # One JVM answers every question: the search loop's seconds are shared out (a batch's mean), the JVM's start
    # and the index's opening are one-time work.
    loop_s = wall_s if loop_s is None else min(loop_s, wall_s)
    timing.onetime["JVM start, index open"] = wall_s - loop_s
    for qid in qids:
        timing.took(qid, loop_s / len(qids))
    timing.batched = bool(qids)
    run = run_from_topk(questions["qid"], positions, scores, chunks, depth)
    write_parquet(run, snakemake.output.run, metadata={"provenance": engine_record})
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
