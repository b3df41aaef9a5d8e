"""Check a rewrites file against its frozen hash (native datasets) and align it with the version's questions."""

from pathlib import Path

import pandas as pd

from rankbench.files import write_parquet
from rankbench.frozen import check_frozen
from rankbench.rewrite import load_rewrites
from rankbench.scripting import run_script


def main(snakemake):
    path = Path(snakemake.input.rewrites)
    if snakemake.params.lock:
        check_frozen(snakemake.params.lock_key, [path], snakemake.params.expected_sha256, snakemake.params.lock)
    write_parquet(load_rewrites(path, pd.read_parquet(snakemake.input.questions)), snakemake.output.queries)


run_script(main, snakemake)
