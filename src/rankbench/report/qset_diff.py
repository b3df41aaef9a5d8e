"""The page comparing two question-set versions: what changed, and how the rankings moved (from
analysis/qset_diff.py's tables)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rankbench.evaluation.metric_names import metric_label
from rankbench.io.markdown import markdown_grid, markdown_literal


def _ranking_text(table: pd.DataFrame, column: str, metric: str, k: int) -> str:
    """Methods best first on one column, "=" between equal means (to 3 decimals, as printed), ">" otherwise."""
    rows = table[(table["metric"] == metric) & (table["k"] == k)].sort_values([column, "method"],
                                                                            ascending=[False, True])
    means = [f"{v:.3f}" for v in rows[column]]
    return "".join(("" if i == 0 else " = " if means[i] == means[i - 1] else " > ") + method
                   for i, method in enumerate(rows["method"]))


def diff_markdown(summary: Mapping[str, Any], changes: pd.DataFrame, table: pd.DataFrame, flipped: pd.DataFrame,
                  grain: str) -> str:
    """The diff page: what changed in the questions, what it does to each method, and to the ranking."""
    va, vb = summary["a"]["version"], summary["b"]["version"]
    counts = ", ".join(f"{len(ids)} {change}" for change, ids in summary["changes"].items()) or "no change"
    lines = [f"# Question-set versions {va} → {vb}", "",
             f"- {va}: sha256 `{summary['a']['sha256']}`", f"- {vb}: sha256 `{summary['b']['sha256']}`",
             f"- changes: {counts}", ""]
    metric, _, k = summary["ranking_metric"].partition("@")
    metric_name = metric_label(metric, int(k))
    order = {column: _ranking_text(table, column, metric, int(k))
             for column in ("a_all", "b_all", "a_common", "b_common")}
    if summary["ranking_changed"]:
        lines.append(f"- **the ranking of methods on {metric_name} changed**: {va}: {order['a_all']}; "
                     f"{vb}: {order['b_all']}")
    else:
        lines.append(f"- the ranking of methods on {metric_name} is the same on both versions: {order['a_all']}")
    lines.append(f"- on the questions common to both: {'changed' if summary['ranking_changed_on_common'] else 'same'} "
                 f"({va}: {order['a_common']}; {vb}: {order['b_common']})")
    lines += ["", "## Questions", ""]
    if changes.empty:
        lines += ["No question was added, removed or changed.", ""]
    else:
        frame = changes.assign(before=changes["before"].map(markdown_literal),
                               after=changes["after"].map(markdown_literal)).set_index("qid")
        lines += [markdown_grid(frame), ""]
    lines += [f"## Metrics ({grain} grain)", "",
              "*all*: every evaluated question of the version; *common*: questions evaluated in both (same qid, "
              "with each version's own labels).", ""]
    frame = pd.DataFrame({
        "method": table["method"], "metric": [metric_label(m, kk) for m, kk in zip(table["metric"], table["k"])],
        f"{va} all": [f"{v:.3f} (n={n})" for v, n in zip(table["a_all"], table["n_a"])],
        f"{vb} all": [f"{v:.3f} (n={n})" for v, n in zip(table["b_all"], table["n_b"])],
        f"{va} common": table["a_common"].map("{:.3f}".format), f"{vb} common": table["b_common"].map("{:.3f}".format),
        "Δ common": (table["b_common"] - table["a_common"]).map("{:+.3f}".format),
    }).set_index("method")
    lines += [markdown_grid(frame), "", f"## Questions found or lost (hit@k, common questions, {va} → {vb})", ""]
    if flipped.empty:
        lines += ["No method found or lost a question between the versions at any k.", ""]
    for method, by_k in summary["flips"].items():
        lines.append(f"- {method}: " + "; ".join(f"{name} {', '.join(ids)}" for name, ids in by_k.items() if ids))
    return "\n".join(lines) + "\n"
