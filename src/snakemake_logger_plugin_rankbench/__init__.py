"""rankbench's hook into Snakemake's own config reading (not a logger anyone selects).

Snakemake reads every `--configfile` while it builds its settings, before the Snakefile runs, with a loader
that builds `!!python/name:` objects, runs YTE templates and expands a YAML alias bomb of mappings. It imports
every installed `snakemake_logger_plugin_*` package earlier still, while parsing its command line: importing
this one makes Snakemake read config files with rankbench's bounded safe loader instead
(docs/concepts/safety.md). The Snakefile reads the files again with the same loader, so a run is safe without this hook
too, except for what Snakemake's loader itself does first.
"""

from __future__ import annotations

from logging import LogRecord
from pathlib import Path
from typing import Any

import snakemake.common.configfile
import snakemake.settings.types
from snakemake_interface_common.exceptions import WorkflowError
from snakemake_interface_logger_plugins.base import LogHandlerBase

try:
    from rankbench.errors import InputError
    from rankbench.io.config_file import load_config_file
except ImportError:  # a rankbench without the loader (e.g. an older checkout on the path): leave Snakemake as it is
    load_config_file = None


def load_configfile(path: str | Path) -> dict[str, Any]:
    """Snakemake's `load_configfile`, with rankbench's loader: a mapping of plain data, or a one-line error."""
    try:
        return load_config_file(path)
    except InputError as error:
        raise WorkflowError(str(error)) from None


if load_config_file is not None:
    # Both names Snakemake 9 calls: settings.types imported it at its own import; workflow.py imports it per call.
    snakemake.settings.types.load_configfile = load_configfile
    snakemake.common.configfile.load_configfile = load_configfile


class LogHandler(LogHandlerBase):
    """Required of a logger plugin; selecting it (`--logger rankbench`) logs nothing."""

    def emit(self, record: LogRecord) -> None:
        """Drop the record: this plugin exists for its import-time hook only."""

    @property
    def writes_to_stream(self) -> bool:
        return False

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False

    @property
    def has_formatter(self) -> bool:
        return False

    @property
    def needs_rulegraph(self) -> bool:
        return False
