"""Method × leak type × k: mean leaked chunks per question and questions with at least one leak."""

import pandas as pd

from rankbench.analysis.leaks import leak_summary
from rankbench.io.files import write_parquet
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    per_method = {method: pd.read_parquet(path) for method, path in zip(snakemake.params.methods,
                                                                        snakemake.input.leaks)}
    write_parquet(leak_summary(per_method), snakemake.output.summary)


run_script(main, snakemake)
