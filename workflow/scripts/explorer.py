"""The per-question explorer of one question-set version: one self-contained HTML page."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.report.explorer import ExplorerSettings, explorer_html, explorer_payload
from rankbench.report.pages import with_draft_banner


def main(snakemake):
    p, inputs = snakemake.params, snakemake.input
    manifest = json.loads(Path(inputs.manifest).read_text())
    settings = ExplorerSettings(dataset=p.dataset, qset=manifest["version"], sha256=manifest["sha256"],
                                grain=p.report["grain"], ks=tuple(p.ks),
                                headline=tuple(tuple(item) for item in p.report["headline"]),
                                relevance_threshold=p.relevance_threshold, alpha=p.report["alpha"],
                                ci=p.report["ci"], baseline=p.baseline, cards=p.cards)
    payload = explorer_payload(
        pd.read_parquet(inputs.questions), pd.read_parquet(inputs.labels),
        {chunker: pd.read_parquet(path) for chunker, path in zip(p.chunkers, inputs.chunks)},
        {method: pd.read_parquet(path) for method, path in zip(p.methods, inputs.runs)},
        {method: pd.read_parquet(path) for method, path in zip(p.methods, inputs.metrics)},
        {chunker: pd.read_parquet(path) for chunker, path in zip(p.chunkers, inputs.qrels)},
        pd.read_parquet(inputs.failures), pd.read_parquet(inputs.aggregate), p.specs, p.chunker_of, settings,
        pd.read_parquet(inputs.changed))
    write_text(with_draft_banner(explorer_html(payload), p.drafts), snakemake.output.html)


run_script(main, snakemake)
