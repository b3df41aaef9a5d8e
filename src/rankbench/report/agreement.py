"""The LLM judge agreement page: what was judged, kappa per kind and the confusion matrix (from
analysis/agreement.py's tables)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.analysis.agreement import ALL


def agreement_markdown(stats: pd.DataFrame, cells: pd.DataFrame, judged: pd.DataFrame, title: str) -> str:
    """The report: what was judged, the agreement table and the overall confusion matrix."""
    seconds = judged.loc[judged["seconds"] > 0, "seconds"]
    lines = [f"# LLM judge agreement: {title}", "",
             f"Pooled pairs judged: {len(judged)} ({int(judged['judge'].isna().sum())} unparsable replies); "
             f"with a human label: {int(judged['human'].notna().sum())}.",
             f"Judge requests sent in this run: {len(seconds)}"
             + (f", {seconds.mean():.2f} s per pair on average." if len(seconds) else " (all from the cache)."),
             "", "Agreement where both a human and the judge graded the pair (grades 0–3):", "",
             "| kind | n | exact | kappa | kappa linear | kappa quadratic | 95% CI (quadratic) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for row in stats.itertuples(index=False):
        interval = ("–" if np.isnan(row.kappa_quadratic_low)
                    else f"{row.kappa_quadratic_low:.2f} to {row.kappa_quadratic_high:.2f}")
        lines.append(f"| {row.kind} | {row.n} | {row.exact:.3f} | {row.kappa:.3f} | {row.kappa_linear:.3f} | "
                     f"{row.kappa_quadratic:.3f} | {interval} |")
    lines += ["", "95% CI: percentile bootstrap over the pairs (fixed seed); with few pairs it is wide, and the "
              "kappa says little."]
    overall = cells[cells["kind"] == ALL].pivot(index="human", columns="judge", values="count")
    lines += ["", "Confusion matrix (all kinds; rows: human grade, columns: judge grade):", "",
              "| human \\ judge | " + " | ".join(str(c) for c in overall.columns) + " |",
              "|---|" + "---:|" * len(overall.columns)]
    lines += [f"| {h} | " + " | ".join(str(int(v)) for v in overall.loc[h]) + " |" for h in overall.index]
    return "\n".join(lines) + "\n"
