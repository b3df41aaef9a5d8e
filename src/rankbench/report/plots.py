"""Figures as PNG and deterministic SVG (matplotlib Agg, no date, fixed hash salt): recall curves, a metric with
CI whiskers, a per-kind heatmap, mean grade by rank, top-1 score distributions and a metric over runs. Many methods
are drawn as small multiples (one panel each, the baseline in grey beside it), at most WIDTH inches wide: a figure
fits a 1200-px page at the saved resolution."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS, largest_groups
from rankbench.io.files import write_atomically

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# The house style, applied while a figure is drawn and saved (never to matplotlib's global rcParams: importing this
# module changes nothing for its caller). Figures are plain Figure objects, outside pyplot: no backend is selected.
# Every label is user text (methods, kinds, titles, experiment labels) shown literally: `$…$` is never mathtext.
_STYLE: dict[RcKeyType, Any] = {"svg.hashsalt": "rankbench", "font.size": 10, "axes.spines.top": False,
                                "axes.spines.right": False, "figure.dpi": 100, "savefig.dpi": 120,
                                "text.parse_math": False}
_P = ParamSpec("_P")
# Widest figure in inches (x savefig.dpi 120 = 1200 px) and the panels per row of small multiples.
WIDTH = 10.0
PANELS_PER_ROW = 4
BASELINE_COLOR = "0.55"


def house_style(draw: Callable[_P, Figure]) -> Callable[_P, Figure]:
    """A drawing function run inside the house style."""
    @functools.wraps(draw)
    def styled(*args: _P.args, **kwargs: _P.kwargs) -> Figure:
        with matplotlib.rc_context(_STYLE):
            return draw(*args, **kwargs)
    return styled


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float],
              squeeze: bool = True) -> tuple[Figure, Any]:
    """A new figure and its axes, like pyplot.subplots but not registered with pyplot."""
    figure = Figure(figsize=figsize)
    return figure, figure.subplots(nrows, ncols, squeeze=squeeze)


def small_multiples(count: int, panel_height: float = 2.3) -> tuple[Figure, list[Any]]:
    """A grid of `count` panels, PANELS_PER_ROW a row (fewer when fewer), WIDTH wide; unused cells hidden."""
    columns = max(1, min(PANELS_PER_ROW, count))
    rows = max(1, -(-count // columns))
    width = min(WIDTH, 2.6 * columns + 0.6)
    figure, axes = new_figure(rows, columns, figsize=(width, panel_height * rows + 0.9), squeeze=False)
    flat = list(axes.flat)
    for axis in flat[count:]:
        axis.set_visible(False)
    return figure, flat[:count]


def finish_panels(figure: Figure, axes: list[Any], ylabel: str, xlabel: str, title: str) -> Figure:
    """Small multiples in the house layout: small titles and ticks, a grid, the y label on each row's first panel,
    one x label and one title for the figure."""
    for axis in axes:
        axis.title.set_fontsize(9)
        axis.tick_params(labelsize=8)
        axis.grid(alpha=0.3)
    for axis in axes[::PANELS_PER_ROW]:
        axis.set_ylabel(ylabel)
    figure.supxlabel(xlabel, fontsize=9)
    figure.suptitle(title, fontsize=10)
    return figure


def colors(methods: Sequence[str]) -> dict[str, tuple]:
    """One stable colour per method (sorted names), the same in every figure; up to 20 stay distinct."""
    names = sorted(methods)
    palette = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {m: palette(i % palette.N) for i, m in enumerate(names)}


def save(figure: Figure, png: str | Path, svg: str | Path) -> None:
    """Write a figure as PNG and SVG without timestamps, atomically, in the house style."""
    with matplotlib.rc_context(_STYLE):
        figure.tight_layout()
        write_atomically(png, lambda tmp: figure.savefig(tmp, format="png", metadata={"Software": None}))
        write_atomically(svg, lambda tmp: figure.savefig(tmp, format="svg", metadata={"Date": None}))


def _rows(aggregate: pd.DataFrame, grain: str, metric: str, kind: str | None = ALL_KINDS) -> pd.DataFrame:
    """Rows of one grain and metric, of one kind (None: every kind)."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["metric"] == metric)]
    return rows if kind is None else rows[rows["kind"] == kind]


@house_style
def recall_curves(aggregate: pd.DataFrame, grain: str, title: str, baseline: str | None = None) -> Figure:
    """recall@k against k, one panel per method (best recall at the largest k first) with its 95% CI as a band and
    the baseline's curve in grey in every other panel."""
    rows = _rows(aggregate, grain, "recall").sort_values("k")
    deepest = rows[rows["k"] == rows["k"].max()].sort_values(["mean", "method"], ascending=[False, True])
    methods = deepest["method"].tolist()
    palette = colors(methods)
    figure, axes = small_multiples(len(methods))
    reference = rows[rows["method"] == baseline]
    for axis, method in zip(axes, methods):
        group = rows[rows["method"] == method]
        if len(reference) and method != baseline:
            axis.plot(reference["k"], reference["mean"], color=BASELINE_COLOR, linestyle="--", linewidth=1,
                      label=f"{baseline} (baseline)")
        axis.plot(group["k"], group["mean"], marker="o", markersize=3, color=palette[method], label=method)
        axis.fill_between(group["k"], group["ci_low"], group["ci_high"], color=palette[method], alpha=0.15)
        axis.set(ylim=(0, 1.02), title=method)
        axis.set_xticks(sorted(rows["k"].unique()))
    return finish_panels(figure, axes, f"recall@k ({grain})", "k (results shown)",
                         title + ("" if baseline not in methods else f" (grey dashed: {baseline}, the baseline)"))


@house_style
def metric_bars(aggregate: pd.DataFrame, grain: str, metric: str, k: int, title: str) -> Figure:
    """One bar per method (best first) with its 95% bootstrap CI as whiskers and the value printed."""
    rows = _rows(aggregate, grain, metric)
    rows = rows[rows["k"] == k].sort_values(["mean", "method"], ascending=[False, True])
    palette = colors(aggregate["method"].unique())
    figure, axis = new_figure(figsize=(6.4, 0.55 * len(rows) + 1.4))
    y = np.arange(len(rows))
    axis.barh(y, rows["mean"], color=[palette[m] for m in rows["method"]],
              xerr=[rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]], capsize=4)
    for position, (mean, high) in enumerate(zip(rows["mean"], rows["ci_high"])):
        axis.text(high + 0.01, position, f"{mean:.3f}", va="center", fontsize=9)
    axis.set_yticks(y, rows["method"])
    axis.invert_yaxis()
    axis.set(xlim=(0, 1.12), xlabel=f"{metric_label(metric, k)} ({grain} grain), 95% CI", title=title)
    return figure


@house_style
def kind_heatmap(aggregate: pd.DataFrame, grain: str, metric: str, k: int, title: str) -> Figure:
    """Methods × question kinds, the value written in each cell (darker = better): all questions, then the
    MAX_GROUPS kinds with the most questions (the title says so when there are more)."""
    rows = _rows(aggregate, grain, metric, kind=None)
    rows = rows[(rows["k"] == k)]
    n = rows.groupby("kind")["n"].max()
    sizes = {str(kind): int(size) for kind, size in n.items() if kind != ALL_KINDS}
    shown = largest_groups(sizes)
    if len(shown) < len(sizes):
        title = f"{title} (the {len(shown)} largest of {len(sizes):,} kinds)"
    rows = rows[rows["kind"].isin([ALL_KINDS, *shown])]
    grid = rows.pivot(index="method", columns="kind", values="mean")
    kinds = [ALL_KINDS] + sorted(c for c in grid.columns if c != ALL_KINDS)
    grid = grid[[c for c in kinds if c in grid.columns]]
    figure, axis = new_figure(figsize=(min(WIDTH, 1.2 * len(grid.columns) + 2.6), 0.5 * len(grid) + 1.8))
    image = axis.imshow(grid.to_numpy(dtype=float), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for (i, j), value in np.ndenumerate(grid.to_numpy(dtype=float)):
        if not np.isnan(value):
            axis.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9,
                      color="white" if value < 0.6 else "black")
    axis.set_xticks(range(len(grid.columns)), [f"{c}\n(n={n[c]})" for c in grid.columns], rotation=30, ha="right",
                    fontsize=8)
    axis.set_yticks(range(len(grid)), grid.index)
    axis.spines[:].set_visible(False)
    figure.colorbar(image, ax=axis, label=f"{metric_label(metric, k)} ({grain} grain)")
    axis.set_title(title)
    return figure


@house_style
def mean_grade_by_rank(grades: Mapping[str, pd.DataFrame], grain: str, title: str, baseline: str | None = None
                       ) -> Figure:
    """Mean relevance grade (0–3; unjudged and empty positions count 0) at each rank, one panel per method (highest
    mean grade at rank 1 first), the baseline's line in grey in the others."""
    means = {}
    for method, frame in sorted(grades.items()):
        rows = frame[(frame["grain"] == grain) & (frame["kind"] == ALL_KINDS)]
        numeric = rows[rows["grade"].isin(["0", "1", "2", "3"])]
        means[method] = (numeric["grade"].astype(int) * numeric["share"]).groupby(numeric["rank"]).sum()
    top = max([float(mean.max()) for mean in means.values() if len(mean)] + [1.0])
    methods = sorted(means, key=lambda m: (-float(means[m].iloc[0]) if len(means[m]) else 0.0, m))
    palette = colors(methods)
    figure, axes = small_multiples(len(methods))
    for axis, method in zip(axes, methods):
        if baseline in means and method != baseline:
            axis.plot(means[baseline].index, means[baseline].to_numpy(), color=BASELINE_COLOR, linestyle="--",
                      linewidth=1)
        axis.plot(means[method].index, means[method].to_numpy(), marker="o", markersize=3, color=palette[method])
        axis.set(ylim=(0, top * 1.05), title=method)
    return finish_panels(figure, axes, f"mean grade ({grain})", "rank",
                         title + ("" if baseline not in means else f" (grey dashed: {baseline}, the baseline)"))


@house_style
def top1_distributions(top1: pd.DataFrame, title: str) -> Figure:
    """Per method (own scale), the top-1 scores of answerable and unanswerable questions, side by side."""
    methods = sorted(top1["method"].unique())
    figure, axes = small_multiples(len(methods), panel_height=2.6)
    for axis, method in zip(axes, methods):
        rows = top1[(top1["method"] == method) & top1["score"].notna()]
        groups = [rows[rows["answerable"]]["score"].to_numpy(), rows[~rows["answerable"]]["score"].to_numpy()]
        for position, (values, color) in enumerate(zip(groups, ("tab:blue", "tab:red"))):
            if len(values):
                axis.boxplot(values, positions=[position], widths=0.5, showfliers=False,
                             medianprops={"color": color})
                jitter = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else np.zeros(1)
                axis.scatter(position + jitter, values, s=9, color=color, alpha=0.6)
        axis.set_xticks([0, 1], ["answerable", "unanswerable"], rotation=20, fontsize=8)
        axis.set_title(method, fontsize=9)
        axis.tick_params(labelsize=8)
    for axis in axes[::PANELS_PER_ROW]:
        axis.set_ylabel("top-1 score")
    none = "" if (~top1["answerable"].astype(bool)).any() else " (no unanswerable question: nothing to calibrate)"
    figure.suptitle(title + none, fontsize=10)
    return figure


@house_style
def history_plot(history: pd.DataFrame, metric: str, title: str) -> Figure:
    """A metric over successive runs (x: run, labelled by date and experiment label), one line per method, one panel
    per version (two a row); a version with a single run so far shows its values as bars, since a line needs two."""
    qsets = sorted(history["qset"].unique())
    columns = min(2, max(1, len(qsets)))
    rows_of_panels = max(1, -(-len(qsets) // columns))
    methods = sorted(history["method"].unique())
    height = max(3.2, 0.22 * len(methods) + 1.6)
    width = WIDTH if columns > 1 else 7.0
    lines = history.groupby("qset")["run"].nunique().max() > 1
    # One legend for every panel (a method has one colour in all), in a row of its own under them, in as many
    # columns as its longest name lets fit the width: beside a panel it was cut at the figure's edge or covered the
    # next panel.
    legend_columns = max(1, min(len(methods), int(width / (0.06 * max(map(len, methods), default=1) + 0.5))))
    legend_height = (0.17 * -(-len(methods) // legend_columns) + 0.2) if lines else 0.0
    figure = Figure(figsize=(width, height * rows_of_panels + 0.6 + legend_height))
    grid = figure.add_gridspec(rows_of_panels + bool(lines), columns,
                               height_ratios=[height] * rows_of_panels + ([legend_height] if lines else []))
    axes = np.array([[figure.add_subplot(grid[row, column]) for column in range(columns)]
                     for row in range(rows_of_panels)])
    for axis in list(axes.flat)[len(qsets):]:
        axis.set_visible(False)
    palette = colors(methods)
    if lines:
        key = figure.add_subplot(grid[-1, :])
        key.axis("off")
        handles = [key.plot([], [], marker="o", markersize=3, color=palette[method])[0] for method in methods]
        key.legend(handles, methods, loc="upper center", ncol=legend_columns, fontsize=7, frameon=False,
                   borderaxespad=0)
    for axis, qset in zip(axes.flat, qsets):
        rows = history[history["qset"] == qset]
        runs = rows.drop_duplicates("run")[["run", "date", "label"]].reset_index(drop=True)
        if len(runs) == 1:
            single = rows.sort_values([metric, "method"], ascending=[True, False])
            axis.barh(range(len(single)), single[metric], color=[palette[m] for m in single["method"]])
            axis.set_yticks(range(len(single)), single["method"], fontsize=7)
            date, label = runs.loc[0, "date"], runs.loc[0, "label"]
            axis.set(xlim=(0, 1.02), xlabel=metric,
                     title=f"{qset}: one run so far ({date[:10]}{', ' + label if label else ''})")
            axis.title.set_fontsize(9)
            continue
        position = {run: i for i, run in enumerate(runs["run"])}
        for method, group in rows.groupby("method"):
            axis.plot(group["run"].map(position), group[metric], marker="o", markersize=3, label=method,
                      color=palette[method])
        axis.set_xticks(range(len(runs)), [f"{d[:10]}\n{label or ''}" for d, label in zip(runs["date"], runs["label"])],
                        fontsize=7, rotation=30, ha="right")
        axis.set(ylabel=metric, title=qset, ylim=(0, 1.02))
        axis.title.set_fontsize(9)
        axis.grid(alpha=0.3)
    figure.suptitle(title, fontsize=10)
    return figure


# The cost axis of the frontier is log-scaled when its methods' p95 span more than this factor.
LOG_SPAN = 100


@house_style
def frontier_plot(table: pd.DataFrame, label: str, title: str, budget_ms: float | None = None) -> Figure:
    """Quality (with its 95% CI) against served p95 ms, one point per method with one, the Pareto set joined by a line
    and its points filled, other points hollow; a method over the latency budget drawn with a cross and the budget
    as a vertical line. A log x axis when the p95 span more than LOG_SPAN×. Labels placed so that none overlaps
    another (place_labels)."""
    rows = table[table["p95_ms"].notna() & (table["p95_ms"] > 0)].sort_values(["p95_ms", "method"])
    palette = colors(table["method"])
    figure, axis = new_figure(figsize=(7.5, 5.0))
    front = rows[rows["pareto"]]
    axis.plot(front["p95_ms"], front["mean"], color=BASELINE_COLOR, linestyle="--", linewidth=1, zorder=1,
              label="Pareto set (nothing both better and cheaper)")
    over = rows["over_budget"] if "over_budget" in rows else pd.Series(False, index=rows.index)
    for row, is_over in zip(rows.itertuples(index=False), over):
        color = palette[row.method]
        axis.errorbar(row.p95_ms, row.mean, yerr=[[row.mean - row.ci_low], [row.ci_high - row.mean]],
                      fmt="X" if is_over else "o", color=color,
                      markerfacecolor=color if row.pareto else "white", capsize=3, zorder=2)
    if len(rows) and rows["p95_ms"].max() > LOG_SPAN * rows["p95_ms"].min():
        axis.set_xscale("log")
        axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    if budget_ms:
        axis.axvline(budget_ms, color="#b22222", linewidth=1, linestyle=":",
                     label=f"latency budget {budget_ms:g} ms (X: over it)")
    axis.set(xlabel="ms a question takes served, p95 (serving probe; this machine)",
             ylabel=f"{label}, 95% CI", title=title)
    axis.legend(loc="lower right", fontsize=8, frameon=False)
    axis.autoscale_view()
    figure.tight_layout()  # as save() lays it out: the labels, kept inside the axes, do not move it again
    place_labels(figure, axis, [(row.method, row.p95_ms, row.mean, palette[row.method])
                                for row in rows.itertuples(index=False)])
    return figure


# Offsets (points) tried in turn for a label: near its point first, right then left, then further up and down (a
# label moved far from its point gets a thin line back to it).
LABEL_OFFSETS = [(dx, dy) for step in range(40) for dy in ((4 + 10 * step // 2) * (1 if step % 2 == 0 else -1),)
                 for dx in (6, -6)]


def place_labels(figure: Figure, axis: Any, points: Sequence[tuple[str, float, float, Any]]) -> None:
    """Annotate each point with its name at the first offset whose text box overlaps no label placed so far (nor
    leaves the axes), measured with the figure's renderer; a label with no free offset takes the first one."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    placed: list[Any] = []
    frame = axis.get_window_extent(renderer)
    for name, x, y, color in points:
        chosen = None
        for dx, dy in LABEL_OFFSETS:
            line = {"arrowstyle": "-", "color": color, "linewidth": 0.5} if abs(dy) > 24 else None
            text = axis.annotate(name, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=8, color=color,
                                 ha="left" if dx > 0 else "right", va="center", arrowprops=line)
            box = text.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(other) for other in placed):
                chosen = text
                break
            text.remove()
        if chosen is None:
            chosen = axis.annotate(name, (x, y), textcoords="offset points", xytext=LABEL_OFFSETS[0], fontsize=8,
                                   color=color, va="center")
        placed.append(chosen.get_window_extent(renderer))
