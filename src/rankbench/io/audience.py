"""report.audience: the report built for one audience keeps only that audience's questions (and their labels), so
every page, from the metrics on, is about those questions alone."""

from __future__ import annotations

import pandas as pd

from rankbench.errors import InputError

ALL_AUDIENCES = "all"


def for_audience(questions: pd.DataFrame, labels: pd.DataFrame, audience: str, version: str, source: str = "config"
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The questions of `audience` and their labels (everything for 'all'); an error naming the config file
    (`source`) when the version has none (the start checks call this too, before any job)."""
    if audience == ALL_AUDIENCES:
        return questions, labels
    kept = questions[questions["audience"] == audience].reset_index(drop=True)
    if not len(kept):
        raise InputError(source, "report.audience", f"is {audience!r}, but question-set version {version!r} has "
                         f"no {audience} question", "Set report.audience to all, or to an audience the version has.")
    return kept, labels[labels["qid"].isin(kept["qid"])].reset_index(drop=True)


def audience_line(manifest: dict) -> list[str]:
    """The line at the top of a version's pages built for one audience (none for every question)."""
    audience = manifest.get("audience", ALL_AUDIENCES)
    if audience == ALL_AUDIENCES:
        return []
    return [f"**Audience: {audience}** — only the {audience} questions are evaluated and shown (report.audience); "
            "the other questions of this version are left out of every number on this page.", ""]
