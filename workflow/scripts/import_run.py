"""Import a run made elsewhere (TREC or Parquet) as this workflow's run Parquet, cut at the evaluation depth; an
empty run, or one naming no document of the corpus, is named in the log (it would score 0 without a word)."""

import logging

import pandas as pd

from rankbench.io.files import write_parquet
from rankbench.io.trec import read_run
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    run = read_run(snakemake.input.run, snakemake.params.format)
    run = run[run["rank"] <= snakemake.params.depth].reset_index(drop=True)
    known = run["doc_id"].isin(pd.read_parquet(snakemake.input.documents, columns=["doc_id"])["doc_id"])
    if run.empty:
        logging.warning("%s holds no result: method %s scores 0 on every metric", snakemake.input.run,
                        snakemake.wildcards.method)
    elif not known.any():
        logging.warning("%s names no document of the corpus (e.g. %r): method %s scores 0 on every metric; a TREC "
                        "run's docno must be a corpus doc_id", snakemake.input.run, run["doc_id"].iloc[0],
                        snakemake.wildcards.method)
    elif not known.all():
        logging.info("%d of %d results of %s name a document that is not in the corpus", int((~known).sum()),
                     len(run), snakemake.input.run)
    write_parquet(run, snakemake.output.run)


run_script(main, snakemake)
