"""The calibration page: how well each method's top-1 score separates answerable from unanswerable questions
(from analysis/calibration.py's tables)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.analysis.calibration import ZONES, separation
from rankbench.io.markdown import markdown_grid

SHOWN_THRESHOLDS = 9  # evenly spaced rows of a method's table, besides its fewest-errors ones


def shown_thresholds(group: pd.DataFrame) -> pd.DataFrame:
    """The rows of one method's thresholds (ascending) a page shows: SHOWN_THRESHOLDS evenly spaced, and the lowest
    and highest with the fewest errors."""
    positions = set(np.linspace(0, len(group) - 1, min(SHOWN_THRESHOLDS, len(group))).round().astype(int))
    best = np.flatnonzero(group["errors"].to_numpy() == group["errors"].min())
    return group.iloc[sorted(positions | {int(best[0]), int(best[-1])})]


def calibration_markdown(top1: pd.DataFrame, table: pd.DataFrame, qset: str, zones: pd.DataFrame | None = None,
                         k: int = 10) -> str:
    """Separation per method, the graded zones of the methods that set `abstention.zones` (zone_table's rows), then
    each method's threshold table with its fewest-errors threshold in bold; one line when the version has no
    unanswerable (or no answerable) question, as there is nothing to separate (nor any zone to grade)."""
    title = f"# Abstention calibration: question-set version {qset}"
    answerable = top1.drop_duplicates("qid")["answerable"]
    if answerable.all() or not answerable.any():
        missing = "unanswerable" if answerable.all() else "answerable"
        return (f"{title}\n\nNot applicable (no {missing} question: every question of this version "
                f"{'has' if missing == 'unanswerable' else 'lacks'} a relevant label), so no abstention threshold "
                "can be calibrated and the abstention zones table (`abstention.zones`) is absent: no zone could "
                "show what it catches and costs.\n")
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
    if zones is not None and len(zones):
        lines += zones_markdown(zones, k)
    lines += ["Each method's top-1 scores, answerable against unanswerable: [the plot](plots/calibration.svg).", ""]
    lines += ["Every distinct top-1 score is tried as a threshold (`calibration/thresholds.parquet` has them all); "
              f"each method's table shows {SHOWN_THRESHOLDS} of them evenly spaced and the lowest and highest with the "
              "fewest errors (in bold).", ""]
    for method, group in table.groupby("method", sort=True):
        best = group["errors"].min()
        winners = group[group["errors"] == best]["threshold"]
        reach = (f"a threshold of {winners.iloc[0]:.4f}" if len(winners) == 1 else
                 f"{len(winners)} of the {len(group)} thresholds tried, from {winners.iloc[0]:.4f} to "
                 f"{winners.iloc[-1]:.4f}")
        group = shown_thresholds(group)
        frame = pd.DataFrame({
            "threshold": group["threshold"].map("{:.4f}".format),
            "answerable below": group["answerable_below"].map("{:.0%}".format),
            "unanswerable at or above": group["unanswerable_above"].map("{:.0%}".format),
            "errors (questions)": [f"**{e}**" if e == best else str(e) for e in group["errors"]],
        }).set_index("threshold")
        lines += [f"## {method}", "", f"Fewest errors: {best} of {len(top1[top1['method'] == method])} questions, "
                  f"with {reach}.", "", markdown_grid(frame), ""]
    return "\n".join(lines)


def _share(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:.0%}"


def zones_markdown(zones: pd.DataFrame, k: int) -> list[str]:
    """The graded-abstention section: per method, its zones (questions and hit@k inside each), then what each
    threshold costs and catches: answerable questions pushed below it, unanswerable questions caught below it."""
    lines = ["## Abstention zones", "",
             "Below t1 the assistant abstains, from t1 to below t2 it answers cautiously (with the sources), from t2 "
             "normally (`abstention.zones`). Share of answerable / unanswerable: of all answerable / unanswerable "
             f"questions, those inside the zone; hit@{k}: of its answerable questions, those with a relevant item in "
             f"the top {k}.", ""]
    for method, group in zones.groupby("method", sort=True):
        rows = group.set_index("zone").loc[list(ZONES)]
        t1, t2 = rows.loc["cautious", "low"], rows.loc["cautious", "high"]
        frame = pd.DataFrame({
            "zone": [f"abstain (< {t1:.4g})", f"cautious ({t1:.4g} to < {t2:.4g})", f"normal (≥ {t2:.4g})"],
            "answerable": [f"{n} ({_share(s)})" for n, s in zip(rows["answerable"], rows["answerable_share"])],
            "unanswerable": [f"{n} ({_share(s)})" for n, s in zip(rows["unanswerable"], rows["unanswerable_share"])],
            f"hit@{k} inside": rows["hit"].map(lambda v: "–" if pd.isna(v) else f"{v:.3f}").to_list(),
        }).set_index("zone")
        abstain, cautious = rows.loc["abstain"], rows.loc["cautious"]
        costs = pd.DataFrame({
            "threshold": [f"t1 = {t1:.4g} (abstain)", f"t2 = {t2:.4g} (cautious or abstain)"],
            "answerable pushed below": [_share(abstain["answerable_share"]),
                                        _share(abstain["answerable_share"] + cautious["answerable_share"])],
            "unanswerable caught below": [_share(abstain["unanswerable_share"]),
                                          _share(abstain["unanswerable_share"] + cautious["unanswerable_share"])],
        }).set_index("threshold")
        lines += [f"### {method}", "", markdown_grid(frame), "", markdown_grid(costs), ""]
    return lines
