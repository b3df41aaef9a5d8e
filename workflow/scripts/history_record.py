"""Write the run's history record of one question-set version: its recorded metrics per method, with the models
each loaded (the history page appends it, see record_history.py)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

from rankbench.analysis.headline_history import run_records
from rankbench.configuration.models import model_provenance
from rankbench.configuration.software import software_versions
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.records.provenance import source_commit


def main(snakemake):
    p = snakemake.params
    aggregate = pd.read_parquet(snakemake.input.aggregate)
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    config = json.loads(p.config_json)
    headline = [tuple(item) for item in p.report["headline"]]
    recorded = list(dict.fromkeys(headline + [tuple(p.report["plot_metric"])]))  # the history page plots the latter
    models = model_provenance(p.models, dict(zip(p.engine_methods, snakemake.input.engine_runs)))
    records = run_records(aggregate, manifest, p.dataset, p.config_sha256, config.get("experiment", {}),
                          recorded, p.report["grain"], models, p.method_models,
                          software_versions(), source_commit(), p.draft)
    write_text(json.dumps(records, indent=1, ensure_ascii=False, sort_keys=True) + "\n", snakemake.output.record)


run_script(main, snakemake)
