"""Check a rewrites file against its frozen hash (native datasets) and what earlier results were made from, and
align it with the version's questions."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

from pathlib import Path

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.frozen import frozen_digest, guard_results, results_record
from rankbench.io.rewrites import load_rewrites


def main(snakemake):
    path, key = Path(snakemake.input.rewrites), snakemake.params.lock_key
    digest = frozen_digest(key, path, snakemake.params.expected_sha256, snakemake.params.lock)
    # Like a version: the rewrites a run was made from never change under the same name, even with the lock edited.
    version_folder = Path(snakemake.output.queries).parent.parent
    guard_results(key, digest, results_record(version_folder, snakemake.wildcards.rewrite))
    write_parquet(load_rewrites(path, pd.read_parquet(snakemake.input.questions)), snakemake.output.queries)


run_script(main, snakemake)
