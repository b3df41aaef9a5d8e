"""The marks of every comparison table (Holm-significant vs the baseline, within one question's worth, best value)
and the cell they go in: shared by the workflow's pages (report.tables) and Evaluation / Comparison rendering."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.evaluation.evidence import PROMPT_TOKENS
from rankbench.evaluation.metric_names import NOT_RANKED_METRICS, metric_label

BETTER, WORSE, NEAR = "↑", "↓", "°"
LATEX_MARKS = {BETTER: r"$^{\uparrow}$", WORSE: r"$^{\downarrow}$", NEAR: r"$^{\circ}$"}
# An uncertainty (RBP's residual), a description of the list (pollution: distinct documents, the top document's
# share) or a cost (prompt tokens), not a quality: no best value and no better/worse mark.
NOT_RANKED = (*NOT_RANKED_METRICS, PROMPT_TOKENS)


def legend(alpha: float, baseline: str | None) -> str:
    """What the marks mean, in one sentence."""
    if baseline is None:
        return "Bold: best value of the column. No baseline is configured, so no significance marks."
    return (f"Bold: best value of the column. {BETTER} / {WORSE}: better / worse than the baseline `{baseline}`, "
            f"paired randomization test Holm-corrected over the methods, p < {alpha:g}. "
            f"{NEAR}: within one question's worth of the baseline (one question alone accounts for the difference).")


def marked(aggregate: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The aggregate with `significant` (↑/↓/''), `near` (within one question's worth of the baseline) and `best`."""
    table = aggregate.copy()
    compared = (table["baseline"].notna() & (table["method"] != table["baseline"]) & table["p_holm"].notna()
                & ~table["metric"].isin(NOT_RANKED))
    significant = compared & (table["p_holm"] < alpha)
    table["significant"] = ""
    table.loc[significant & (table["diff"] > 0), "significant"] = BETTER
    table.loc[significant & (table["diff"] < 0), "significant"] = WORSE
    table["near"] = compared & table["below_one_question"].fillna(False).astype(bool)
    group = ["grain", "kind", "metric", "k"]
    top = table.groupby(group)["mean"].transform("max")
    count = table.groupby(group)["mean"].transform("count")
    table["best"] = (table["mean"] == top) & (count > 1) & ~table["metric"].isin(NOT_RANKED)
    return table


# What a cell reads of its row (tier only where tiers were joined in).
CELL_FIELDS = ("mean", "best", "ci_low", "ci_high", "significant", "near", "tier")


def cell(row: Mapping[str, Any] | pd.Series, ci: bool, latex: bool = False) -> str:
    """One cell: the mean (bold when best), its CI on request, then the marks."""
    text = f"{row['mean']:.3f}"
    if row["best"]:
        text = rf"\textbf{{{text}}}" if latex else f"**{text}**"
    if ci:
        text += f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    marks = row["significant"] + (NEAR if row["near"] else "")
    tier = row.get("tier")
    tier_mark = rf"$^{{\mathrm{{{tier}}}}}$" if latex and isinstance(tier, str) else ""
    return text + ("".join(LATEX_MARKS[m] for m in marks) + tier_mark if latex else marks)


def cell_rows(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """What each row's cell reads, as plain dicts in row order: a pandas lookup or Series per cell cost most of a
    comparison page's time (thousands of cells)."""
    return rows[[field for field in CELL_FIELDS if field in rows.columns]].to_dict("records")


def latex_escape(text: str) -> str:
    return "".join({"&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$", "{": r"\{", "}": r"\}",
                    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}.get(c, c)
                   for c in text)


def wide(table: pd.DataFrame, grain: str, kind: str, metrics: Sequence[tuple[str, int]], ci: bool,
         methods: Sequence[str], latex: bool = False) -> pd.DataFrame:
    """Methods × metric@k cells of one grain and kind ('–' where a method has no value)."""
    rows = table[(table["grain"] == grain) & (table["kind"] == kind)]
    records = dict(zip(zip(rows["method"], rows["metric"], rows["k"]), cell_rows(rows)))
    frame = pd.DataFrame(index=pd.Index(list(methods), name="method"))
    for metric, k in metrics:
        frame[metric_label(metric, k)] = [cell(records[m, metric, k], ci, latex) if (m, metric, k) in records
                                          else "–" for m in methods]
    return frame
