"""Write a run as a TREC run file whose scores make trec_eval reproduce our order (ties included)."""

import pandas as pd

from rankbench.scripting import run_script
from rankbench.trec import write_trec_run


def main(snakemake):
    write_trec_run(pd.read_parquet(snakemake.input.run), snakemake.output.run, tag=snakemake.wildcards.method)


run_script(main, snakemake)
