"""Append the records of this run to the shared history (under its lock), store each version's run record in its
runs history, redraw the dataset's history pages, and export the stored runs to MLflow when configured."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import logging
from datetime import datetime, timezone
from pathlib import Path

from rankbench.analysis.headline_history import record_run
from rankbench.analysis.run_store import store_run, stored_runs
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.records.mlflow import export_version
from rankbench.report.history import history_html, history_markdown, run_means
from rankbench.report.plots import history_plot, save


def main(snakemake):
    p, output = snakemake.params, snakemake.output
    now = datetime.now(timezone.utc)
    for store, pending in zip(p.stores, snakemake.input.runs):
        run_id = store_run(store, pending, now.strftime("%Y%m%dT%H%M%SZ"))
        logging.info("%s: %s", store, f"run {run_id} stored" if run_id else "same as its latest run, not stored")

    def draw(frame, metric):
        write_text(history_markdown(frame, metric), output.markdown)
        save(history_plot(frame, metric, f"{p.dataset}: {metric} over runs"), output.png, output.svg)

    added = record_run(snakemake.input.records, p.history, p.dataset, p.metric, now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       draw)
    logging.info("%d record(s) added to %s", added, p.history)
    runs = {Path(store).parent.name: stored_runs(store) for store in p.stores}
    write_text(history_html(p.dataset, {qset: run_means(r, p.headline) for qset, r in runs.items()}, p.headline),
               output.html)
    if p.mlflow:
        for store, version_runs in zip(p.stores, runs.values()):
            export_version(p.mlflow, Path(store).parent, version_runs)


run_script(main, snakemake)
