"""The calibration page: how well each method's top-1 score separates answerable from unanswerable questions
(from analysis/calibration.py's tables)."""

from __future__ import annotations

import pandas as pd

from rankbench.analysis.calibration import separation
from rankbench.io.markdown import markdown_grid


def calibration_markdown(top1: pd.DataFrame, table: pd.DataFrame, qset: str) -> str:
    """Separation per method, then each method's threshold table with its fewest-errors threshold in bold; one line
    when the version has no unanswerable (or no answerable) question, as there is nothing to separate."""
    title = f"# Abstention calibration: question-set version {qset}"
    answerable = top1.drop_duplicates("qid")["answerable"]
    if answerable.all() or not answerable.any():
        missing = "unanswerable" if answerable.all() else "answerable"
        return (f"{title}\n\nNot applicable (no {missing} question: every question of this version "
                f"{'has' if missing == 'unanswerable' else 'lacks'} a relevant label), so no abstention threshold "
                "can be calibrated.\n")
    summary = separation(top1).set_index("method")
    for column in ("median_answerable", "median_unanswerable", "auc"):
        summary[column] = summary[column].map(lambda v: "–" if pd.isna(v) else f"{v:.3f}")
    lines = [title, "",
             "Answerable: questions with a relevant label; unanswerable: without one. A method that should say "
             "\"I don't know\" below a top-1 score threshold wrongly abstains on the answerable questions below it "
             "and wrongly answers the unanswerable ones at or above it. AUC: chance that an answerable question's "
             "top-1 score beats an unanswerable one's (0.5 = the score carries no signal).", "",
             markdown_grid(summary.rename(columns={"median_answerable": "median top-1 (answerable)",
                                                   "median_unanswerable": "median top-1 (unanswerable)"})), ""]
    for method, group in table.groupby("method", sort=True):
        best = group["errors"].min()
        frame = pd.DataFrame({
            "threshold": group["threshold"].map("{:.4f}".format),
            "answerable below": group["answerable_below"].map("{:.0%}".format),
            "unanswerable at or above": group["unanswerable_above"].map("{:.0%}".format),
            "errors (questions)": [f"**{e}**" if e == best else str(e) for e in group["errors"]],
        }).set_index("threshold")
        lines += [f"## {method}", "", markdown_grid(frame), ""]
    return "\n".join(lines)
