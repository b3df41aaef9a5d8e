"""mkdocs hook: the metric table of docs/concepts/metrics.md, rendered from the metric table itself.

The page holds METRIC_TABLE_MARKER where the table goes; each row's text is its metric's `what` and `checked` in
src/rankbench/evaluation/metric_names.py, so a new metric is on the page without editing it. The table is read
from this checkout's src/ (not an installed rankbench, which may be another version).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from rankbench.evaluation.metric_names import METRIC_TABLE_MARKER, metric_table_markdown


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """A page's markdown with the metric table where the marker is (every other page passes unchanged)."""
    return markdown.replace(METRIC_TABLE_MARKER, metric_table_markdown().rstrip("\n"))
