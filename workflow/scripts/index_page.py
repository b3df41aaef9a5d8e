"""Write the entry page of a dataset's results: every version's headline and links to the pages the run wrote."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.report.index_page import VersionEntry, index_page


def main(snakemake):
    p = snakemake.params
    versions = []
    for qset, aggregate, pairs, manifest, recommended in zip(p.qsets, snakemake.input.aggregates,
                                                             snakemake.input.pairs, snakemake.input.manifests,
                                                             snakemake.input.recommended):
        record = json.loads(Path(manifest).read_text())
        versions.append(VersionEntry(qset, record["sha256"], int(record["questions"]), pd.read_parquet(aggregate),
                                     p.pages, qset in p.drafts, pd.read_parquet(pairs),
                                     Path(recommended).read_text()))
    decision = {"types": p.method_types, "inputs": p.method_inputs, "settings": p.decision}
    page = index_page(p.dataset, versions, p.diffs, p.history, p.report, p.baseline, decision, p.quick)
    write_text(page, snakemake.output.html)


run_script(main, snakemake)
