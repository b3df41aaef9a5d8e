"""The label validation page: the findings of corpus/label_checks.py, counted per problem."""

from __future__ import annotations

import pandas as pd


def findings_markdown(findings: pd.DataFrame, title: str) -> str:
    """Counts per problem with the questions concerned, as a Markdown report."""
    lines = [f"# Label validation: {title}", ""]
    if findings.empty:
        return "\n".join(lines + ["No findings.", ""])
    for problem, group in findings.groupby("problem", sort=True):
        qids = ", ".join(sorted(group["qid"].unique()))
        lines += [f"- **{problem}**: {len(group)} ({qids})"]
    return "\n".join(lines + [""])
