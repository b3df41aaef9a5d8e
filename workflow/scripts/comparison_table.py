"""Write the Markdown comparison table of one question-set version."""

import json
from pathlib import Path

import pandas as pd

from rankbench.files import write_text
from rankbench.report import comparison_markdown
from rankbench.scripting import run_script


def main(snakemake):
    unmapped = pd.concat([pd.read_parquet(path) for path in snakemake.input.unmapped], ignore_index=True)
    page = comparison_markdown(
        pd.read_parquet(snakemake.input.aggregate), pd.read_parquet(snakemake.input.questions),
        json.loads(Path(snakemake.input.manifest).read_text()), snakemake.params.dataset, snakemake.params.ks,
        snakemake.params.settings, Path(snakemake.input.validation).read_text(), unmapped)
    write_text(page, snakemake.output.table)


run_script(main, snakemake)
