"""Comparison tables from the tidy aggregate: cells with marks (Holm-significant vs the baseline, within one
question's worth), best values, and the same table as Markdown, LaTeX (booktabs) and CSV."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from rankbench.evaluation.marks import BETTER as BETTER
from rankbench.evaluation.marks import LATEX_MARKS as LATEX_MARKS
from rankbench.evaluation.marks import NEAR as NEAR
from rankbench.evaluation.marks import WORSE as WORSE
from rankbench.evaluation.marks import cell, cell_rows, latex_escape
from rankbench.evaluation.marks import legend as legend
from rankbench.evaluation.marks import marked as marked
from rankbench.evaluation.marks import wide as wide
from rankbench.evaluation.metric_names import EXTRA_METRICS_AT_K, EXTRA_METRICS_FULL, metric_label
from rankbench.evaluation.scoring import largest_groups
from rankbench.evaluation.stats import holm
from rankbench.io.files import csv_text
from rankbench.io.markdown import markdown_grid, markdown_literal

TABLE_METRICS = ("hit", "recall", "precision", "rr", "ndcg")
POLLUTION_LEGEND = ("docs@k: distinct documents among the top k chunks; top-doc@k: the share of the top k held by its "
                    "most frequent document (chunk grain only). They describe the lists, so no value is bold or "
                    "marked.")
CSV_COLUMNS = ["method", "grain", "kind", "metric", "k", "mean", "ci_low", "ci_high", "n", "baseline", "diff",
               "p_holm", "significant", "below_one_question", "best", "cell"]


def megabytes(value: float) -> str:
    """Bytes as MB with three decimals, `–` when unknown (NaN or None): the cost page's and the vector-size page's."""
    return "–" if pd.isna(value) else f"{value / 1e6:,.3f}"


def table_metrics(aggregate: pd.DataFrame, ks: Sequence[int], columns: Sequence[Sequence[Any]] = ()
                  ) -> list[tuple[str, int]]:
    """Columns of the full tables: TABLE_METRICS at every k, then the report's `columns` ([metric, k] pairs), then
    the metrics computed on request (evaluation.metrics) that the aggregate holds."""
    extra = aggregate.loc[aggregate["metric"].isin(EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL), ["metric", "k"]]
    listed = list(dict.fromkeys([(m, k) for m in TABLE_METRICS for k in ks] + [(m, int(k)) for m, k in columns]))
    return listed + sorted({(m, int(k)) for m, k in extra.itertuples(index=False)} - set(listed))


def with_tiers(table: pd.DataFrame, tiers: pd.DataFrame) -> pd.DataFrame:
    """The marked table with each cell's tier letter (tiers.parquet; null where no tier was computed)."""
    keys = ["method", "grain", "kind", "metric", "k"]
    return table.merge(tiers[keys + ["tier"]], on=keys, how="left")


DIFFICULTY_ORDER = ("easy", "medium", "hard")
# The fewest questions a group (kind, tag, difficulty) must have evaluated to get a column (small_groups):
# report.min_group's default (configuration.defaults reads it from here: this module needs only the core).
MIN_GROUP = 5
GROUP_LEGEND = ("Each table: one metric at {grain} grain, a column per group (n = questions evaluated / in the "
                "group; a question counts under each of its tags). Mean [95% bootstrap CI]; the marks compare with the "
                "baseline as in the headline table, but Holm-corrected over every comparison in the table (methods "
                "× groups), so a mark holds for the table as a whole.")


def holm_within(rows: pd.DataFrame) -> pd.DataFrame:
    """The aggregate rows with p_holm recomputed over every comparison with the baseline they hold: the rows of one
    table are one family, whatever per-group family the aggregate corrected over."""
    compared = rows["baseline"].notna() & (rows["method"] != rows["baseline"]) & rows["p_randomization"].notna()
    out = rows.copy()
    out.loc[compared, "p_holm"] = holm(out.loc[compared, "p_randomization"].to_numpy(dtype=float))
    return out


def group_order(groups: Sequence[str]) -> list[str]:
    """Groups in reading order: easy, medium, hard first (difficulties), the rest alphabetically."""
    known = [g for g in DIFFICULTY_ORDER if g in groups]
    return known + sorted(set(groups) - set(known))


def group_tables(rows: pd.DataFrame, grain: str, metrics: Sequence[tuple[str, int]], ci: bool,
                 methods: Sequence[str], alpha: float, heading: str, minimum: int = 1) -> list[str]:
    """Per metric, a Markdown table of methods × groups (the `kind` column of aggregate-like rows: kinds, tags or
    difficulties), each with its CIs and its marks Holm-corrected within the table; `heading` names the groups. At
    most MAX_GROUPS groups, the largest (scoring.largest_groups), of at least `minimum` questions evaluated
    (small_groups): the caller says how many more there are."""
    rows = rows[rows["grain"] == grain]
    rows = rows[~rows["kind"].astype(str).isin(small_groups(rows, minimum))]
    sizes = (rows["n"] + rows["n_excluded"]).groupby(rows["kind"]).max()
    groups = group_order(largest_groups({str(group): int(n) for group, n in sizes.items()}))
    rows = rows[rows["kind"].isin(groups)]
    lines: list[str] = []
    for metric, k in metrics:
        one = rows[(rows["metric"] == metric) & (rows["k"] == k)]
        if not len(one):
            continue
        table = marked(holm_within(one), alpha)
        frame = pd.DataFrame(index=pd.Index(list(methods), name="method"))
        for group in groups:
            sizes = table[table["kind"] == group]
            if not len(sizes):
                continue
            given = int((sizes["n"] + sizes["n_excluded"]).max())
            column = f"{markdown_literal(group)} (n={int(sizes['n'].max())}/{given})"
            frame[column] = wide(table, grain, group, [(metric, k)], ci, methods).iloc[:, 0]
        lines += [f"### {heading}: {metric_label(metric, k)}", "", markdown_grid(frame), ""]
    return lines


def small_groups(rows: pd.DataFrame, minimum: int) -> dict[str, int]:
    """The groups of aggregate-like rows (`kind`: kinds, tags, difficulties) with fewer than `minimum` questions
    evaluated (the most any method evaluates) -> that number: too few for a mean to say anything, they are counted,
    not tabled."""
    evaluated = rows["n"].groupby(rows["kind"].astype(str)).max()
    return {str(group): int(n) for group, n in evaluated.items() if n < minimum}


TIERS_LEGEND = ("tier letters: a = the best method and every method not significantly worse than it (paired "
                "randomization test, Holm-corrected over the pairs with the best, p >= {alpha:g}); b = the same among "
                "the methods left; and so on. The findings about the best use the same family, so they agree with "
                "tier a; `pairs.parquet`'s p_holm and the per-kind findings correct over all pairs.")


def method_grid(rows: pd.DataFrame, metrics: Sequence[tuple[str, int]], methods: Sequence[str],
                text: Callable[[pd.Series], str]) -> pd.DataFrame:
    """Methods x metric@k cells, text(row) of each (method, metric, k) row of `rows` (so indexed), '–' where there
    is none; cells are made metric by metric, method by method."""
    frame = pd.DataFrame(index=pd.Index(list(methods), name="method"))
    for metric, k in metrics:
        frame[metric_label(metric, k)] = [text(rows.loc[(method, metric, k)]) if (method, metric, k) in rows.index
                                          else "–" for method in methods]
    return frame


def tier_grid(tiers: pd.DataFrame, grain: str, kind: str, metrics: Sequence[tuple[str, int]],
              methods: Sequence[str]) -> pd.DataFrame:
    """Methods x metric@k cells 'tier · rank (95% interval)', e.g. 'a · 2 (1–3)' ('–' where none was computed)."""
    rows = tiers[(tiers["grain"] == grain) & (tiers["kind"] == kind)].set_index(["method", "metric", "k"])

    def text(row: pd.Series) -> str:
        ranked = f" · {row['rank']} ({row['rank_low']}–{row['rank_high']})" if pd.notna(row["rank"]) else ""
        return f"{row['tier']}{ranked}"

    return method_grid(rows, metrics, methods, text)


def near_best(table: pd.DataFrame, pairs: pd.DataFrame, grain: str, kind: str,
              metrics: Sequence[tuple[str, int]]) -> list[str]:
    """Columns where one question alone accounts for the lead of the best method over the runner-up."""
    notes = []
    for metric, k in metrics:
        rows = table[(table["grain"] == grain) & (table["kind"] == kind) & (table["metric"] == metric)
                     & (table["k"] == k)].sort_values(["mean", "method"], ascending=[False, True])
        if len(rows) < 2:
            continue
        (first, a), (second, b) = rows[["method", "mean"]].iloc[0], rows[["method", "mean"]].iloc[1]
        pair = pair_row(pairs, grain, kind, metric, k, first, second)
        if pair is not None and bool(pair["below_one_question"]):
            notes.append(f"{metric_label(metric, k)}: {first} ({a:.3f}) and {second} ({b:.3f}) are within one "
                         f"question's worth: one question alone accounts for the difference")
    return notes


def pair_row(pairs: pd.DataFrame, grain: str, kind: str, metric: str, k: int, x: str, y: str) -> pd.Series | None:
    """The pairs row of methods x and y, seen from x: diff = x − y, wins/losses of x."""
    rows = pairs[(pairs["grain"] == grain) & (pairs["kind"] == kind) & (pairs["metric"] == metric)
                 & (pairs["k"] == k)]
    direct = rows[(rows["method_a"] == x) & (rows["method_b"] == y)]
    if len(direct):
        return direct.iloc[0]
    swapped = rows[(rows["method_a"] == y) & (rows["method_b"] == x)]
    if not len(swapped):
        return None
    row = swapped.iloc[0].copy()
    row["method_a"], row["method_b"], row["mean_a"], row["mean_b"] = x, y, row["mean_b"], row["mean_a"]
    row["diff"], row["diff_low"], row["diff_high"] = -row["diff"], -row["diff_high"], -row["diff_low"]
    if "d_z" in row:
        row["d_z"], row["d_z_low"], row["d_z_high"] = -row["d_z"], -row["d_z_high"], -row["d_z_low"]
    row["wins"], row["losses"] = row["losses"], row["wins"]
    if "p_noninferior_a" in row:
        row["p_noninferior_a"], row["p_noninferior_b"] = row["p_noninferior_b"], row["p_noninferior_a"]
    return row


def latex_table(table: pd.DataFrame, metrics: Sequence[tuple[str, int]], grains: Sequence[str],
                methods: Sequence[str], ci: bool, caption: str, label: str, comments: Sequence[str]) -> str:
    """A booktabs table: methods × (grain × metric), best value bold, significance marks as superscripts."""
    blocks = [wide(table, grain, "all", metrics, ci, methods, latex=True) for grain in grains]
    width = len(metrics)
    lines = [f"% {line}" for line in comments]
    lines += [r"\begin{table}[t]", r"\centering", r"\small",
              r"\begin{tabular}{l" + ("r" * width) * len(grains) + "}", r"\toprule"]
    lines.append(" & " + " & ".join(rf"\multicolumn{{{width}}}{{c}}{{{grain} grain}}" for grain in grains) + r" \\")
    lines.append("".join(rf"\cmidrule(lr){{{2 + i * width}-{1 + (i + 1) * width}}}" for i in range(len(grains))))
    headings = [latex_escape(metric_label(m, k)) for m, k in metrics] * len(grains)
    lines += ["Method & " + " & ".join(headings) + r" \\", r"\midrule"]
    for method in methods:
        cells = [c for block in blocks for c in block.loc[method]]
        lines.append(latex_escape(method) + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}",
              rf"\caption{{{latex_escape(caption)}}}".replace("↑", r"$\uparrow$").replace("↓", r"$\downarrow$")
              .replace("°", r"$^{\circ}$"),
              rf"\label{{{label}}}", r"\end{table}", ""]
    return "\n".join(lines)


def csv_table(table: pd.DataFrame, metrics: Sequence[tuple[str, int]], ci: bool) -> str:
    """Tidy CSV of every cell the tables show (all kinds, both grains), with its marks."""
    keep = pd.MultiIndex.from_frame(table[["metric", "k"]]).isin(list(metrics))
    rows = table[keep].copy()
    rows["cell"] = [cell(row, ci).replace("**", "") for row in cell_rows(rows)]
    rows["below_one_question"] = rows["near"]
    rows = rows.sort_values(["grain", "kind", "metric", "k", "method"], ignore_index=True)[CSV_COLUMNS]
    return csv_text(rows, float_format="%.6f")
