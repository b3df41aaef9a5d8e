"""Write the vector-size page of one question-set version: compressed dense indexes against their float flat twins
(Markdown, HTML)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.records.footprint import footprint
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.vector_size import vector_size_page


def main(snakemake):
    p = snakemake.params
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    page = draft_banner(p.drafts) + vector_size_page(
        pd.read_parquet(snakemake.input.aggregate), pd.read_parquet(snakemake.input.pairs), p.indexes,
        footprint(p.served),
        p.twins, p.report, p.resamples, p.dataset, manifest["version"])
    write_text(markdown_html(page, f"vector size {p.dataset} {manifest['version']}"), snakemake.output.html)
    write_text(page, snakemake.output.page)


run_script(main, snakemake)
