"""Glue for workflow scripts: log to the rule's log file (secrets redacted); bad input ends the job with one clear
paragraph."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from rankbench.errors import InputError
from rankbench.execution.threads import limit_threads
from rankbench.redaction import RedactingFilter, redact_uncaught

# Libraries whose INFO lines are chatter in a job's log (FAISS names each CPU build it tried to load).
QUIET_LOGGERS = ("faiss.loader",)


def run_script(main: Callable[[Any], None], snakemake: Any) -> None:
    """Call main(snakemake) with every thread pool sized from the job's threads; an InputError becomes a message
    on stderr and in the log, and exit status 1; any other error its traceback there, redacted."""
    redact_uncaught()
    limit_threads(snakemake.threads)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        handlers.append(logging.FileHandler(snakemake.log[0], mode="w", encoding="utf-8"))
    for handler in handlers:
        handler.addFilter(RedactingFilter())
        handler.setLevel(logging.INFO)  # a library that sets its own logger to DEBUG (bm25s does) stays quiet
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers,
                        force=True)
    logging.captureWarnings(True)  # a warning's text is redacted like every other line
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        main(snakemake)
    except InputError as error:
        logging.error("rankbench: %s", error)
        sys.exit(1)
    except Exception:  # a bug: its traceback is kept for the report, with secrets masked like every other line
        logging.exception("rankbench: the job failed unexpectedly; please report this traceback")
        sys.exit(1)
