"""The study across datasets: methods × (datasets × headline metrics) with each dataset's own significance marks,
the mean over datasets and the pooled random-effects difference from the baseline, as Markdown, LaTeX (booktabs),
CSV and tidy tables, and a forest plot per headline metric."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rankbench.analysis.meta import paired_effect, random_effects, sign_test, wilcoxon_p
from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.io.files import csv_text
from rankbench.io.markdown import markdown_grid, markdown_literal
from rankbench.report.plots import colors, house_style, new_figure
from rankbench.report.run_pages import DRAFT_MARK
from rankbench.report.tables import (
    BETTER,
    LATEX_MARKS,
    NEAR,
    WORSE,
    cell,
    latex_escape,
    marked,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CELL_COLUMNS = ["study", "column", "dataset", "qset", "method", "dataset_method", "grain", "metric", "k", "mean",
                "ci_low", "ci_high", "n", "baseline", "diff", "p_holm", "significant", "near", "best", "skipped"]
EFFECT_COLUMNS = ["column", "method", "metric", "k", "diff", "variance", "se", "ci_low", "ci_high", "n", "weight"]
POOLED_COLUMNS = ["method", "baseline", "metric", "k", "datasets", "diff", "se", "ci_low", "ci_high", "p", "tau2",
                  "i2", "q", "p_q", "better", "worse", "p_sign", "p_wilcoxon", "note"]
CONFIDENCE = 0.95
_Z = 1.959963984540054  # the normal quantile of a two-sided 95% interval


def _metrics(plan: Mapping[str, Any]) -> list[tuple[str, int]]:
    return [(metric, int(k)) for metric, k in plan["metrics"]]


def study_cells(plan: Mapping[str, Any], aggregates: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per (column, study method, headline metric): the dataset's aggregate mean and CI, its Holm p against
    the dataset's baseline with the table marks, bold for the best study method of the column, or the reason the
    method does not run there."""
    rows = []
    for column in plan["columns"]:
        aggregate = aggregates[column["label"]]
        table = marked(aggregate[(aggregate["grain"] == plan["grain"]) & (aggregate["kind"] == ALL_KINDS)],
                       plan["alpha"])
        indexed = table.set_index(["method", "metric", "k"])
        for metric, k in _metrics(plan):
            for method in plan["methods"]:
                base = {"study": plan["name"], "column": column["label"], "dataset": column["dataset"],
                        "qset": column["qset"], "method": method, "grain": plan["grain"], "metric": metric, "k": k}
                name = column["methods"].get(method)
                if name is None:
                    rows.append({**base, "skipped": column["skipped"][method]})
                    continue
                if (name, metric, k) not in indexed.index:
                    raise ValueError(f"{column['aggregate']} has no {plan['grain']}-grain {metric}@{k} row of {name}")
                row = indexed.loc[(name, metric, k)]
                rows.append({**base, "dataset_method": name, **{c: row[c] for c in (
                    "mean", "ci_low", "ci_high", "n", "baseline", "diff", "p_holm", "significant", "near")}})
    cells = pd.DataFrame(rows).reindex(columns=CELL_COLUMNS)
    top = cells.groupby(["column", "metric", "k"])["mean"].transform("max")
    count = cells.groupby(["column", "metric", "k"])["mean"].transform("count")
    cells["best"] = (cells["mean"] == top) & (count > 1)
    cells["significant"] = cells["significant"].fillna("")
    cells["near"] = cells["near"].fillna(False).astype(bool)
    return cells.astype({"n": "Int64", "k": np.int64, "mean": np.float64, "ci_low": np.float64,
                         "ci_high": np.float64, "diff": np.float64, "p_holm": np.float64})


def dataset_effects(plan: Mapping[str, Any], per_query: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Per column, non-baseline study method and headline metric: the mean paired difference from the baseline over
    the questions both evaluate, its variance (var/n), normal 95% CI and n; `weight` is filled by pooled_table."""
    rows = []
    for column in plan["columns"]:
        baseline = per_query[(column["label"], plan["baseline"])]
        for method in plan["methods"]:
            if method == plan["baseline"] or method not in column["methods"]:
                continue
            values = per_query[(column["label"], method)]
            for metric, k in _metrics(plan):
                a, b = (_values(frame, plan["grain"], metric, k) for frame in (values, baseline))
                paired = pd.concat({"a": a, "b": b}, axis=1, join="inner").dropna()
                effect = paired_effect(paired["a"].to_numpy(), paired["b"].to_numpy())
                se = float(np.sqrt(effect.variance))
                rows.append({"column": column["label"], "method": method, "metric": metric, "k": k,
                             "diff": effect.diff, "variance": effect.variance, "se": se,
                             "ci_low": effect.diff - _Z * se, "ci_high": effect.diff + _Z * se, "n": effect.n,
                             "weight": np.nan})
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS).astype({"k": np.int64, "n": np.int64, "weight": np.float64})


def _values(frame: pd.DataFrame, grain: str, metric: str, k: int) -> pd.Series:
    """One method's per-question values of one grain and metric@k, by qid."""
    rows = frame[(frame["grain"] == grain) & (frame["metric"] == metric) & (frame["k"] == k)]
    return rows.set_index("qid")["value"].astype(np.float64)


def pooled_table(plan: Mapping[str, Any], effects: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per non-baseline method and headline metric: the DerSimonian–Laird pooled difference over the datasets it
    ran on (with tau², I², Q), the sign and Wilcoxon tests over datasets; and the effects with their relative
    random-effects weights. `note` says why a row has no pooled estimate."""
    rows, effects = [], effects.copy()
    for method in plan["methods"]:
        if method == plan["baseline"]:
            continue
        for metric, k in _metrics(plan):
            mask = (effects["method"] == method) & (effects["metric"] == metric) & (effects["k"] == k)
            group = effects[mask]
            diffs = group["diff"].to_numpy()
            better, worse, p_sign = sign_test(diffs)
            row: dict[str, Any] = {"method": method, "baseline": plan["baseline"], "metric": metric, "k": k,
                                   "datasets": len(group), "better": better, "worse": worse, "p_sign": p_sign,
                                   "p_wilcoxon": wilcoxon_p(diffs), "note": ""}
            if len(group) < 2:
                row["note"] = "runs on fewer than two datasets"
            elif not (group["variance"] > 0).all():
                zero = ", ".join(group.loc[group["variance"] <= 0, "column"])
                row["note"] = f"equals the baseline on every question of {zero}: no sampling variance to weight by"
            else:
                pooled = random_effects(diffs, group["variance"].to_numpy(), CONFIDENCE)
                effects.loc[mask, "weight"] = pooled.weights
                row |= {key: getattr(pooled, key) for key in ("diff", "se", "ci_low", "ci_high", "p", "tau2", "i2",
                                                              "q", "p_q")}
            rows.append(row)
    return pd.DataFrame(rows).reindex(columns=POOLED_COLUMNS), effects


def _signed(value: float) -> str:
    return f"{value:+.3f}"


def pooled_cell(row: pd.Series | None, alpha: float, latex: bool = False) -> str:
    """'+0.041 [+0.012, +0.070]' with ↑/↓ when the pooled difference is significant (p < alpha); '–' without one."""
    if row is None:
        return "(baseline)"
    if pd.isna(row["diff"]):
        return "--" if latex else "–"
    interval = f"[{_signed(row['ci_low'])}, {_signed(row['ci_high'])}]"
    mark = (BETTER if row["diff"] > 0 else WORSE) if row["p"] < alpha else ""
    if latex:
        return rf"{_signed(row['diff'])} {{\scriptsize {interval}}}" + (LATEX_MARKS[mark] if mark else "")
    return f"{_signed(row['diff'])} {interval}{mark}"


def _mean_rows(cells: pd.DataFrame, plan: Mapping[str, Any]) -> pd.DataFrame:
    """Per study method and metric: the mean over datasets of its means (NaN unless it ran on every dataset),
    bold for the best."""
    rows = []
    for (method, metric, k), group in cells.groupby(["method", "metric", "k"], sort=False):
        complete = group["mean"].notna().all()
        rows.append({"method": method, "metric": metric, "k": k,
                     "mean": float(group["mean"].mean()) if complete else np.nan})
    means = pd.DataFrame(rows)
    top = means.groupby(["metric", "k"])["mean"].transform("max")
    means["best"] = (means["mean"] == top) & (means.groupby(["metric", "k"])["mean"].transform("count") > 1)
    return means.set_index(["method", "metric", "k"])


def _grid(cells: pd.DataFrame, pooled: pd.DataFrame, plan: Mapping[str, Any], latex: bool) -> pd.DataFrame:
    """The study table as text cells: per metric, one column per dataset, the mean, the pooled difference."""
    indexed = cells.set_index(["column", "method", "metric", "k"])
    means = _mean_rows(cells, plan)
    pooled_rows = pooled.set_index(["method", "metric", "k"])
    dash = "--" if latex else "–"
    frame = pd.DataFrame(index=pd.Index(plan["methods"], name="method"))
    for metric, k in _metrics(plan):
        label = metric_label(metric, k)
        for column in plan["columns"]:
            frame[f"{label} {column['label']}"] = [
                dash if pd.isna(row["mean"]) else cell(row, False, latex)
                for row in (indexed.loc[(column["label"], method, metric, k)] for method in plan["methods"])]
        frame[f"{label} mean"] = [
            dash if pd.isna(means.loc[(m, metric, k), "mean"]) else
            cell(pd.Series({"mean": means.loc[(m, metric, k), "mean"], "best": means.loc[(m, metric, k), "best"],
                            "significant": "", "near": False}), False, latex)
            for m in plan["methods"]]
        frame[f"{label} pooled Δ"] = [
            pooled_cell(None if m == plan["baseline"] else pooled_rows.loc[(m, metric, k)], plan["alpha"], latex)
            for m in plan["methods"]]
    return frame


def footnotes(plan: Mapping[str, Any]) -> list[str]:
    """Why a cell shows '–': a method that does not run on a dataset (the study file's reason), and the means that
    leave it out."""
    notes = [f"{method} on {column['label']} (–): {reason}" for column in plan["columns"]
             for method, reason in column["skipped"].items()]
    partial = sorted({m for column in plan["columns"] for m in column["skipped"]}, key=plan["methods"].index)
    notes += [f"{m}, mean (–): it does not run on every dataset" for m in partial]
    return notes


def legend(plan: Mapping[str, Any]) -> str:
    """What the marks and the extra columns mean."""
    return (f"Bold: best study method of the column. {BETTER} / {WORSE}: better / worse than the baseline "
            f"`{plan['baseline']}` on that dataset (paired randomization test, Holm-corrected over that dataset's "
            f"configured methods, p < {plan['alpha']:g}, as in its own comparison table); {NEAR}: within one "
            "question's worth of the baseline. mean: the plain mean over datasets. pooled Δ: the difference from the "
            "baseline pooled over datasets by a DerSimonian–Laird random-effects meta-analysis of the per-dataset "
            f"paired differences, with its 95% CI ({BETTER}/{WORSE}: p < {plan['alpha']:g}).")


def study_markdown(cells: pd.DataFrame, pooled: pd.DataFrame, plan: Mapping[str, Any],
                   figures: Mapping[tuple[str, int], str]) -> str:
    """The study page: the table, its legend and footnotes, the pooled statistics and forest plot per metric,
    and what each column is."""
    columns = plan["columns"]
    summary = (f"{len(plan['methods'])} methods on {len(columns)} datasets, {plan['grain']} grain, all questions "
               f"with a relevant label; baseline `{plan['baseline']}`.")
    drafts = [f"{c['label']} ({c['dataset']} {c['qset']})" for c in columns if c["draft"]]
    lines = [f"# Study: {plan['name']}", "", summary, ""]
    if drafts:
        lines += [f"**DRAFT**: {', '.join(map(markdown_literal, drafts))} {'is' if len(drafts) == 1 else 'are'} made "
                  "from a draft question-set version, not frozen: its questions and labels may still change, and so "
                  "may these numbers.", ""]
    lines += [markdown_grid(_grid(cells, pooled, plan, latex=False)), "", legend(plan), ""]
    lines += [f"- {markdown_literal(note)}" for note in footnotes(plan)]
    for metric, k in _metrics(plan):
        label = metric_label(metric, k)
        rows = pooled[(pooled["metric"] == metric) & (pooled["k"] == k)]
        table = pd.DataFrame({
            "datasets": rows["datasets"].astype(str).to_numpy(),
            "pooled Δ [95% CI]": [pooled_cell(r, plan["alpha"]) for _, r in rows.iterrows()],
            "p": [_p(r["p"]) for _, r in rows.iterrows()],
            "τ²": [_number(r["tau2"], ".5f") for _, r in rows.iterrows()],
            "I²": [_number(r["i2"] * 100, ".0f") + ("%" if pd.notna(r["i2"]) else "") for _, r in rows.iterrows()],
            "Q (p)": [f"{r['q']:.2f} ({_p(r['p_q'])})" if pd.notna(r["q"]) else "–" for _, r in rows.iterrows()],
            "better / worse": [f"{r['better']} / {r['worse']}" for _, r in rows.iterrows()],
            "sign test p": [_p(r["p_sign"]) for _, r in rows.iterrows()],
            "Wilcoxon p": [_p(r["p_wilcoxon"]) for _, r in rows.iterrows()],
        }, index=pd.Index(rows["method"].to_numpy(), name="method"))
        lines += ["", f"## {label}: pooled over datasets (vs {plan['baseline']})", "", markdown_grid(table), ""]
        notes = [f"- {r['method']}: no pooled estimate, {r['note']}" for _, r in rows.iterrows() if r["note"]]
        lines += notes + ([""] if notes else []) + [f"![Forest plot, {label}]({figures[(metric, k)]})"]
    smallest = 2 / 2 ** len(columns)
    caveat = (f"With {len(columns)} datasets the sign and Wilcoxon tests cannot give a two-sided p below "
              f"{smallest:.3g}: they say whether the direction is consistent, the meta-analysis how large the "
              "difference is and how much it varies between datasets (τ², I²).")
    lines += ["", caveat, "", "## Datasets", ""]
    datasets = pd.DataFrame({
        "dataset": [c["dataset"] for c in columns],
        "version": [c["qset"] + (f" {DRAFT_MARK}" if c["draft"] else "") for c in columns],
        "config": [f"`{c['source']}`" for c in columns],
        "questions": [str(_questions(cells, c["label"], plan["baseline"])) for c in columns],
        **{m: [c["methods"].get(m, "–") for c in columns] for m in plan["methods"]},
    }, index=pd.Index([c["label"] for c in columns], name="column"))
    lines += [markdown_grid(datasets), ""]
    return "\n".join(lines)


def _questions(cells: pd.DataFrame, column: str, baseline: str) -> int:
    """Questions of a column: the baseline's n (every study metric is over the same questions)."""
    return int(cells[(cells["column"] == column) & (cells["method"] == baseline)]["n"].max())


def _p(value: float) -> str:
    return "–" if pd.isna(value) else ("< 0.001" if value < 0.001 else f"{value:.3f}")


def _number(value: float, spec: str) -> str:
    return "–" if pd.isna(value) else format(value, spec)


def study_latex(cells: pd.DataFrame, pooled: pd.DataFrame, plan: Mapping[str, Any]) -> str:
    """The study table in booktabs: a block of datasets, Avg. and pooled Δ per headline metric (BEIR style)."""
    grid = _grid(cells, pooled, plan, latex=True)
    width = len(plan["columns"]) + 2
    metrics = _metrics(plan)
    headings = [latex_escape(c["label"]) for c in plan["columns"]] + ["Avg.", r"$\Delta$ pooled"]
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{l" + ("r" * width) * len(metrics) + "}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(metric_label(m, k))}}}"
                                for m, k in metrics) + r" \\",
             "".join(rf"\cmidrule(lr){{{2 + i * width}-{1 + (i + 1) * width}}}" for i in range(len(metrics))),
             "Method & " + " & ".join(headings * len(metrics)) + r" \\",
             r"\midrule"]
    for method, row in grid.iterrows():
        lines.append(latex_escape(str(method)) + " & " + " & ".join(row.to_list()) + r" \\")
    lines.append(r"\bottomrule")
    total = 1 + width * len(metrics)
    lines += [rf"\multicolumn{{{total}}}{{l}}{{\footnotesize {latex_escape(note).replace('–', '--')}}} \\"
              for note in footnotes(plan)]
    caption = (legend(plan).replace("`", "").replace(BETTER, "UP").replace(WORSE, "DOWN").replace(NEAR, "NEAR")
               .replace("Δ", "DELTA").replace("–", "-"))
    caption = (latex_escape(caption).replace("UP", r"$\uparrow$").replace("DOWN", r"$\downarrow$")
               .replace("NEAR", r"$^{\circ}$").replace("DELTA", r"$\Delta$").replace("p < ", "$p <$ "))
    lines += [r"\end{tabular}", rf"\caption{{{caption}}}", rf"\label{{tab:study-{latex_escape(plan['name'])}}}",
              r"\end{table}", ""]
    return "\n".join(lines)


def study_csv(cells: pd.DataFrame, pooled: pd.DataFrame, plan: Mapping[str, Any]) -> str:
    """Every cell of the table, tidy: per method, metric and column (a dataset, `mean` or `pooled`), the value,
    its interval and p where it has them, and the text shown."""
    means = _mean_rows(cells, plan)
    rows = []
    for _, c in cells.iterrows():
        rows.append({"method": c["method"], "metric": c["metric"], "k": c["k"], "column": c["column"],
                     "value": c["mean"], "ci_low": c["ci_low"], "ci_high": c["ci_high"], "p": c["p_holm"],
                     "cell": "–" if pd.isna(c["mean"]) else cell(c.copy(), False).replace("**", ""),
                     "note": c["skipped"] if isinstance(c["skipped"], str) else ""})
    for (method, metric, k), m in means.iterrows():
        rows.append({"method": method, "metric": metric, "k": k, "column": "mean", "value": m["mean"],
                     "cell": "–" if pd.isna(m["mean"]) else f"{m['mean']:.3f}", "note": ""})
    for _, p in pooled.iterrows():
        rows.append({"method": p["method"], "metric": p["metric"], "k": p["k"], "column": "pooled",
                     "value": p["diff"], "ci_low": p["ci_low"], "ci_high": p["ci_high"], "p": p["p"],
                     "cell": pooled_cell(p, plan["alpha"]), "note": p["note"]})
    frame = pd.DataFrame(rows, columns=["method", "metric", "k", "column", "value", "ci_low", "ci_high", "p", "cell",
                                        "note"])
    return csv_text(frame, float_format="%.6f")


@house_style
def forest_plot(effects: pd.DataFrame, pooled: pd.DataFrame, plan: Mapping[str, Any], metric: str,
                k: int) -> Figure:
    """Per non-baseline method: each dataset's difference from the baseline with its 95% CI (square sized by its
    random-effects weight) and the pooled difference as a diamond; zero marked."""
    methods = [m for m in plan["methods"] if m != plan["baseline"]]
    palette = colors(methods)
    labels, y = [], 0.0
    figure, axis = new_figure(figsize=(7.2, 0.32 * (len(methods) * (len(plan["columns"]) + 2)) + 1.2))
    for method in methods:
        rows = effects[(effects["method"] == method) & (effects["metric"] == metric) & (effects["k"] == k)]
        for column in plan["columns"]:
            row = rows[rows["column"] == column["label"]]
            labels.append((y, f"{method} · {column['label']}"))
            if len(row):
                r = row.iloc[0]
                size = 30 + 120 * (r["weight"] if pd.notna(r["weight"]) else 0.3)
                axis.plot([r["ci_low"], r["ci_high"]], [y, y], color=palette[method], lw=1.2)
                axis.scatter([r["diff"]], [y], marker="s", s=size, color=palette[method], zorder=3)
            y += 1
        p = pooled[(pooled["method"] == method) & (pooled["metric"] == metric) & (pooled["k"] == k)].iloc[0]
        labels.append((y, f"{method} · pooled (RE)"))
        if pd.notna(p["diff"]):
            axis.fill([p["ci_low"], p["diff"], p["ci_high"], p["diff"]], [y, y - 0.35, y, y + 0.35],
                      color=palette[method], alpha=0.85, zorder=3)
        y += 1.6
    axis.axvline(0, color="#444", lw=0.8, ls="--")
    axis.set_yticks([position for position, _ in labels], [text for _, text in labels], fontsize=8)
    axis.invert_yaxis()
    axis.set(xlabel=f"{metric_label(metric, k)}: difference from {plan['baseline']} ({plan['grain']} grain), 95% CI",
             title=f"{plan['name']}: {metric_label(metric, k)} vs {plan['baseline']}")
    axis.grid(axis="x", alpha=0.3)
    return figure
