"""Write this run's pending record (per-question values, effective config, method identities, provenance, each
question's fingerprints) and what changed since the last recorded run: the comparison page's section and the
questions that moved (the explorer's filter). The record_history job stores the record once the run is complete. Beside
them, the effective config as YAML (the config as the run used it, every default filled in and grids expanded; the
comparison page shows it too)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

import rankbench
from rankbench.analysis.calibration import abstention_values, zone_shares, zone_table
from rankbench.analysis.run_diff import QUESTION_COLUMNS, diff_runs
from rankbench.analysis.run_store import (
    content_sha256,
    per_question_values,
    previous_run,
    question_fingerprints,
    write_record,
)
from rankbench.configuration.config import expand_methods
from rankbench.configuration.defaults import config_yaml, effective_config
from rankbench.configuration.models import model_provenance
from rankbench.configuration.software import software_versions
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet, write_text
from rankbench.records.provenance import method_identities, source_commit
from rankbench.report.run_pages import since_last_run_section


def main(snakemake):
    p, inputs = snakemake.params, snakemake.input
    manifest = json.loads(Path(inputs.manifest).read_text())
    config = json.loads(p.config_json)
    filled_in = effective_config(config, expand_methods(config["methods"], "config"))
    write_text(config_yaml(filled_in), snakemake.output.effective_config)
    effective = json.loads(json.dumps(filled_in, sort_keys=True, default=str))
    recorded = list(dict.fromkeys(tuple(m) for m in p.report["headline"] + [p.report["plot_metric"]]))
    values = per_question_values({m: pd.read_parquet(path) for m, path in zip(p.methods, inputs.metrics)},
                                 recorded, p.report["grain"])
    per_question = pd.read_parquet(inputs.question_zones) if p.zones else pd.DataFrame()
    if len(per_question):  # methods with abstention zones: who abstains, for `rankbench gate --abstention`
        values = pd.concat([values, abstention_values(per_question)], ignore_index=True).sort_values(
            ["method", "metric", "k", "qid"], ignore_index=True)
    models = model_provenance(p.models, dict(zip(p.engine_methods, inputs.engine_runs)))
    identities = method_identities(effective)
    experiment = config.get("experiment", {})
    meta = {"dataset": p.dataset, "qset": manifest["version"], "qset_sha256": manifest["sha256"],
            "config_sha256": p.config_sha256, "config": effective, "label": experiment.get("label"),
            "note": experiment.get("note"), "grain": p.report["grain"], "recorded": [list(m) for m in recorded],
            "headline": p.report["headline"], "plot_metric": p.report["plot_metric"],
            "methods": {m: {"identity": identities[m], "type": p.method_types[m],
                            "models": {key: models[key] for key in p.method_models.get(m, []) if key in models}}
                        for m in p.methods},
            "rankbench_version": rankbench.__version__, "commit": source_commit(), "software": software_versions()}
    if len(per_question):
        meta["abstention"] = {"zones": {m: list(z) for m, z in sorted(p.zones.items())},
                              "shares": zone_shares(zone_table(per_question, p.zones))}
    if p.draft:  # a record without the key is of a frozen version (records before it was kept, too)
        meta["draft"] = True
    questions = pd.read_parquet(inputs.questions)
    # per question: what a later run needs to name the questions whose text or labels changed (not in the content
    # hash: the question set's sha256 already is)
    meta["questions"] = question_fingerprints(questions, pd.read_parquet(inputs.labels))
    meta["content_sha256"] = content_sha256(values, meta)
    previous = previous_run(p.store, meta["content_sha256"])
    diff = diff_runs(previous.values(), values, previous.meta, {**meta, "run_id": "this run"}, p.resamples,
                     p.seed) if previous else None
    texts = dict(zip(questions["qid"], questions["question"]))
    headline = [tuple(item) for item in p.report["headline"]]
    write_record(values, meta, snakemake.output.record)
    write_parquet(diff.questions if diff else pd.DataFrame(columns=QUESTION_COLUMNS), snakemake.output.changed)
    write_text(since_last_run_section(diff, headline, texts), snakemake.output.section)


run_script(main, snakemake)
