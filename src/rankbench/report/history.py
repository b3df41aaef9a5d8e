"""The history pages: `history.md` (the table of runs from history.jsonl) and `history.html`, a self-contained chart
of any headline metric over the recorded runs, per method, each run labelled with its config change (inline SVG and
a few lines of JavaScript; nothing loaded from the network; same runs, same bytes)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import pandas as pd

from rankbench.analysis.run_store import StoredRun, headline_means
from rankbench.evaluation.metric_names import metric_label
from rankbench.io.markdown import markdown_grid, markdown_literal
from rankbench.report.run_pages import DRAFT_MARK, previous_of, run_change_text

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 760, 320, 56, 200, 16, 40
NAME_CHAR, LEGEND_ROW = 6.6, 14  # px of a method name's character at 11 px (wide, to be safe), of a legend row
COLOURS = ("#1b6ca8", "#d1495b", "#00798c", "#edae49", "#66a182", "#8d5a97", "#30343f", "#e07a5f", "#3d405b",
           "#81b29a", "#f2cc8f", "#6d597a")


def history_markdown(frame: pd.DataFrame, metric: str) -> str:
    """The history as a table of runs (date, version, config, label, note) with the metric of each method; a
    version marked (draft) when the run's records say it was not frozen.

    One row per run and version that has records: the rows are grouped, never the product of their columns.
    """
    name, _, k = metric.partition("@")
    drafted = frame["draft"].eq(True) if "draft" in frame else pd.Series(False, index=frame.index)
    frame = frame.assign(qset=frame["qset"].where(~drafted, frame["qset"] + f" {DRAFT_MARK}"))
    index = ["run", "date", "qset", "qset_sha256", "config_sha256", "label", "note"]
    wide = frame.groupby(index + ["method"], sort=True)[metric].first().unstack("method")
    wide = wide.reset_index().assign(qset_sha256=lambda f: f["qset_sha256"].str[:12],
                                     config_sha256=lambda f: f["config_sha256"].str[:12])
    wide = wide.assign(label=wide["label"].map(markdown_literal), note=wide["note"].map(markdown_literal))
    wide = wide.rename(columns={"qset_sha256": "qset sha256", "config_sha256": "config sha256"}).set_index("run")
    wide.columns.name = None
    wide = wide.astype(object).map(lambda v: "" if pd.isna(v) else f"{v:.3f}" if isinstance(v, float) else v)
    drafts = f" {DRAFT_MARK}: a draft version, not frozen (its questions and labels may still change)." \
        if drafted.any() else ""
    return (f"# History of runs: {metric_label(name, int(k) if k else 0)}\n\nOne row per run and question-set "
            f"version; a method's value appears when its record changed in that run.{drafts}\n\n"
            f"{markdown_grid(wide)}\n")


def _chart(means: pd.DataFrame, labels: Sequence[str], runs: Sequence[str], colours: Mapping[str, str]) -> str:
    """One SVG line chart: x the runs in order, y the metric, one polyline (and dots) per method."""
    low, high = float(means.min().min()), float(means.max().max())
    low, high = (low - 0.05, high + 0.05) if high - low < 1e-9 else (low, high)
    # The legend of method names right of the plot gets the room its longest name needs and its rows need (at a
    # fixed RIGHT and HEIGHT, long or many names were cut); the page shrinks the whole chart to fit its width.
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    width = LEFT + inner_w + max(RIGHT, 16 + round(NAME_CHAR * max(map(len, means.columns), default=0)))
    height = max(HEIGHT, TOP + LEGEND_ROW * len(means.columns) + 10)

    def x(i: int) -> float:
        return LEFT + (inner_w * i / (len(runs) - 1) if len(runs) > 1 else inner_w / 2)

    def y(v: float) -> float:
        return TOP + inner_h * (high - v) / (high - low)

    parts = [f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img">',
             f'<line x1="{LEFT}" y1="{TOP + inner_h}" x2="{LEFT + inner_w}" y2="{TOP + inner_h}" stroke="#888"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + inner_h}" stroke="#888"/>']
    for value in (low, (low + high) / 2, high):
        parts.append(f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.3f}</text>')
    for i, (run, label) in enumerate(zip(runs, labels)):
        parts.append(f'<text x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{i + 1}'
                     f'<title>{html.escape(run)}: {html.escape(label)}</title></text>')
    for row, method in enumerate(means.columns):
        series = means[method]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(series) if pd.notna(v))
        colour = colours[method]
        parts.append(f'<g data-method="{html.escape(method)}"><polyline points="{points}" fill="none" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts += [f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.5" fill="{colour}"><title>{html.escape(method)}, '
                  f'run {html.escape(runs[i])}: {v:.4f}</title></circle>' for i, v in enumerate(series) if pd.notna(v)]
        parts.append(f'<text x="{LEFT + inner_w + 10}" y="{TOP + LEGEND_ROW * row + 10}" fill="{colour}">'
                     f'{html.escape(method)}</text></g>')
    return "".join(parts) + "</svg>"


def run_means(runs: Sequence[StoredRun], headline: Sequence[Sequence]) -> pd.DataFrame:
    """One row per (run, method, headline metric): run, run_number, label (its config and question changes, and
    (draft) when made from a draft version), method, metric, k, mean."""
    rows = []
    for run in runs:
        values = run.values()
        label = run_change_text(run, previous_of(run, runs))
        label += f" {DRAFT_MARK}" if run.meta.get("draft") else ""
        for metric, k in headline:
            for method, mean in headline_means(values, metric, int(k)).items():
                rows.append({"run": run.run_id, "run_number": run.number, "label": label, "method": method,
                             "metric": metric, "k": int(k), "mean": float(mean)})
    return pd.DataFrame(rows, columns=["run", "run_number", "label", "method", "metric", "k", "mean"])


def history_html(dataset: str, versions: Mapping[str, pd.DataFrame], headline: Sequence[Sequence]) -> str:
    """The chart page. versions: qset -> run_means of its stored runs. A select picks the version and metric,
    checkboxes the methods."""
    charts, methods = [], sorted({m for frame in versions.values() for m in frame["method"]})
    colours = {method: COLOURS[i % len(COLOURS)] for i, method in enumerate(methods)}
    options = []
    for qset, frame in sorted(versions.items()):
        runs = frame.drop_duplicates("run")[["run", "run_number", "label"]].sort_values("run_number")
        for metric, k in headline:
            rows = frame[(frame["metric"] == metric) & (frame["k"] == int(k))]
            if rows.empty:
                continue
            means = rows.pivot(index="run", columns="method", values="mean").reindex(runs["run"])
            key = f"{qset}/{metric}@{k}"
            options.append(f'<option value="{html.escape(key)}">{html.escape(qset)}: '
                           f'{html.escape(metric_label(metric, int(k)))}</option>')
            legend = "".join(f"<li>{i + 1}. <code>{html.escape(r.run)}</code>: {html.escape(r.label)}</li>"
                             for i, r in enumerate(runs.itertuples()))
            charts.append(f'<section data-chart="{html.escape(key)}"><h2>{html.escape(qset)}: '
                          f'{html.escape(metric_label(metric, int(k)))} over runs</h2>'
                          f'{_chart(means, list(runs["label"]), list(runs["run"]), colours)}'
                          f'<ol class="runs">{legend}</ol></section>')
    boxes = "".join(f'<label><input type="checkbox" checked value="{html.escape(m)}"> {html.escape(m)}</label> '
                    for m in methods)
    script = ("const pick=document.getElementById('metric');"
              "function show(){document.querySelectorAll('[data-chart]').forEach(s=>{s.hidden="
              "s.dataset.chart!==pick.value;});}"
              "pick.addEventListener('change',show);"
              "document.querySelectorAll('#methods input').forEach(b=>b.addEventListener('change',()=>{"
              "document.querySelectorAll('g[data-method]').forEach(g=>{if(g.dataset.method===b.value)"
              "g.style.display=b.checked?'':'none';});}));show();")
    body = ("".join(charts) if charts else "<p>No run recorded yet.</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(dataset)}: history of runs</title><style>body{{font-family:sans-serif;margin:1em}}"
            "svg text{font-size:11px}svg{max-width:100%;height:auto}ol.runs{font-size:.9em;overflow-wrap:anywhere}"
            "label{margin-right:.8em}</style></head><body>"
            f"<h1>{html.escape(dataset)}: history of runs</h1><p>Each point is a recorded run (x: its number; hover "
            "for its id and config change, listed under the chart). The table is in history.md; "
            "<code>rankbench runs</code> and <code>rankbench diff-runs</code> say what changed.</p>"
            f"<p><label>Metric <select id=\"metric\">{''.join(options)}</select></label></p>"
            f"<p id=\"methods\">{boxes}</p>{body}<script>{script}</script></body></html>\n")
