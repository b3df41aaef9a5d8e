"""Evaluation and Comparison results as a table for a notebook or a paper: a tidy frame, Markdown, LaTeX (booktabs)
and HTML, with the 95% CIs and the workflow tables' marks (best bold, ↑/↓ Holm-significant vs the baseline, °
within one question's worth)."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from rankbench.evaluation.marks import latex_escape, legend, marked, wide
from rankbench.evaluation.stats import bootstrap_ci
from rankbench.io.markdown import markdown_grid


def evaluation_frame(per_query: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """One row per metric (named as asked): mean, 95% bootstrap CI over the questions, n."""
    values = per_query.to_numpy(dtype=np.float64).T
    if values.shape[1] == 0:
        return pd.DataFrame({"mean": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": 0},
                            index=pd.Index(per_query.columns, name="metric"))
    low, high = bootstrap_ci(values, n_resamples=n_resamples, seed=seed)
    return pd.DataFrame({"mean": values.mean(axis=1), "ci_low": low, "ci_high": high, "n": values.shape[1]},
                        index=pd.Index(per_query.columns, name="metric"))


def evaluation_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """evaluation_frame as text cells: mean [CI] per metric."""
    cells = [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in zip(frame["mean"], frame["ci_low"], frame["ci_high"])]
    return pd.DataFrame({"mean [95% CI]": cells, "n": frame["n"].astype(str)}, index=frame.index)


def comparison_frame(summary: pd.DataFrame, grain: str, alpha: float) -> pd.DataFrame:
    """The summary with the marks of the workflow's tables: `significant` (↑/↓), `near`, `best`."""
    return marked(summary.assign(grain=grain, kind="all"), alpha).drop(columns="kind")


def comparison_cells(summary: pd.DataFrame, grain: str, alpha: float, latex: bool = False) -> pd.DataFrame:
    """Methods × metrics cells: mean [CI] with its marks, in the summary's order of methods and metrics."""
    table = marked(summary.assign(grain=grain, kind="all"), alpha)
    metrics = list(dict.fromkeys(zip(summary["metric"], summary["k"].astype(int))))
    methods = list(dict.fromkeys(summary["method"]))
    return wide(table, grain, "all", metrics, True, methods, latex)


def markdown(cells: pd.DataFrame, note: str) -> str:
    """A pipe table and its note below."""
    return markdown_grid(cells) + f"\n\n{note}\n"


def latex(cells: pd.DataFrame, caption: str) -> str:
    """A booktabs tabular of the cells (already LaTeX), captioned."""
    columns = [latex_escape(str(c)) for c in cells.columns]
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * len(columns) + "}", r"\toprule",
             latex_escape(cells.index.name or "") + " & " + " & ".join(columns) + r" \\", r"\midrule"]
    lines += [latex_escape(str(name)) + " & " + " & ".join(map(str, row)) + r" \\" for name, row in cells.iterrows()]
    caption = latex_escape(caption).replace("↑", r"$\uparrow$").replace("↓", r"$\downarrow$").replace(
        "°", r"$^{\circ}$")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption}}}", r"\end{table}", ""]
    return "\n".join(lines)


def html_table(cells: pd.DataFrame, note: str) -> str:
    """The cells as an HTML table (bold from Markdown's **…**), every text escaped, the note below."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cells.columns)
    rows = []
    for name, row in cells.iterrows():
        values = []
        for value in map(str, row):
            escaped = html.escape(value)
            if escaped.startswith("**"):
                bold, _, rest = escaped[2:].partition("**")
                escaped = f"<b>{bold}</b>{rest}"
            values.append(f"<td>{escaped}</td>")
        rows.append(f"<tr><th>{html.escape(str(name))}</th>{''.join(values)}</tr>")
    corner = html.escape(cells.index.name or "")
    return (f"<table><thead><tr><th>{corner}</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p><small>{html.escape(note)}</small></p>")


def comparison_note(baseline: str | None, alpha: float, grain: str) -> str:
    """What a Comparison table shows, in one paragraph (the workflow tables' legend)."""
    return f"Mean [95% bootstrap CI], {grain} grain. " + legend(alpha, baseline)
