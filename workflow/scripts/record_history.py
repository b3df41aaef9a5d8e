"""Append the records of this run to the shared history (under its lock) and redraw the dataset's history pages."""

import logging
from datetime import datetime, timezone

from rankbench.analysis.history import record_run
from rankbench.pipeline.scripting import run_script
from rankbench.report.plots import history_plot, save


def main(snakemake):
    p = snakemake.params
    outputs = {name: getattr(snakemake.output, name) for name in ("markdown", "png", "svg")}

    def draw(frame, metric):
        save(history_plot(frame, metric, f"{p.dataset}: {metric} over runs"), outputs["png"], outputs["svg"])

    added = record_run(snakemake.input.records, p.history, p.dataset, p.metric, outputs,
                       datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), draw)
    logging.info("%d record(s) added to %s", added, p.history)


run_script(main, snakemake)
