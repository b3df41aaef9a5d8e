"""Relevance judgements at chunk and document grain for one chunker, and the labels that map to no chunk; the
judgements also as TREC qrels files, one per grain (document ids, chunk ids), so an exported run can be scored with
trec_eval, ranx or ir_measures."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.qrels import build_qrels
from rankbench.io.trec import write_qrels


def main(snakemake):
    qrels, unmapped = build_qrels(pd.read_parquet(snakemake.input.labels), pd.read_parquet(snakemake.input.chunks))
    write_parquet(unmapped, snakemake.output.unmapped)
    write_qrels(qrels[qrels["grain"] == "document"], snakemake.output.docs)
    write_qrels(qrels[qrels["grain"] == "chunk"], snakemake.output.chunks)
    write_parquet(qrels, snakemake.output.qrels)


run_script(main, snakemake)
