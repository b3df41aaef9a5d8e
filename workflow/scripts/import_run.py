"""Import a run made elsewhere (TREC or Parquet) as this workflow's run Parquet, cut at the evaluation depth; an
empty run, or one naming no document of the corpus, is named in the log (it would score 0 without a word)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.ranked_lists import report_unknown_documents
from rankbench.io.trec import read_run


def main(snakemake):
    run = read_run(snakemake.input.run, snakemake.params.format)
    run = run[run["rank"] <= snakemake.params.depth].reset_index(drop=True)
    documents = pd.read_parquet(snakemake.input.documents, columns=["doc_id"])["doc_id"]
    report_unknown_documents(run, documents, snakemake.input.run, snakemake.wildcards.method)
    write_parquet(run, snakemake.output.run)


run_script(main, snakemake)
