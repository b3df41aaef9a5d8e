"""Import a run made elsewhere (TREC or Parquet) as this workflow's run Parquet, cut at the evaluation depth."""

from rankbench.files import write_parquet
from rankbench.scripting import run_script
from rankbench.trec import read_run


def main(snakemake):
    run = read_run(snakemake.input.run, snakemake.params.format)
    write_parquet(run[run["rank"] <= snakemake.params.depth].reset_index(drop=True), snakemake.output.run)


run_script(main, snakemake)
