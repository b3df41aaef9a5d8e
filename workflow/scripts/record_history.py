"""Append the records of this run to the shared history (under its lock) and redraw the dataset's history pages."""

import logging
from datetime import datetime, timezone

from rankbench.history import record_run
from rankbench.scripting import run_script


def main(snakemake):
    p = snakemake.params
    outputs = {name: getattr(snakemake.output, name) for name in ("markdown", "png", "svg")}
    added = record_run(snakemake.input.records, p.history, p.dataset, p.metric, outputs,
                       datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    logging.info("%d record(s) added to %s", added, p.history)


run_script(main, snakemake)
