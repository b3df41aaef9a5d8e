"""Every figure of a 12-method version fits a 1200-px page at a sensible aspect ratio, draws at most the method and
its baseline per panel, and a history of one run draws bars, not lone dots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from rankbench.report.plots import (
    history_plot,
    kind_heatmap,
    mean_grade_by_rank,
    metric_bars,
    recall_curves,
    save,
    top1_distributions,
)

METHODS = ["bm25", *(f"method-{i:02d}[depth={i}]" for i in range(1, 12))]
KINDS = ["all", "code", "paraphrase", "policy", "version", "staff-only", "multi-passage"]


def aggregate() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for method in METHODS:
        for kind in KINDS:
            for metric, k in [("recall", k) for k in (1, 3, 5, 10, 20)] + [("ndcg", 10), ("rr", 10)]:
                mean = float(rng.uniform(0.3, 0.95))
                rows.append({"method": method, "grain": "chunk", "kind": kind, "metric": metric, "k": k, "n": 40,
                             "mean": mean, "ci_low": mean - 0.1, "ci_high": min(1.0, mean + 0.1)})
    return pd.DataFrame(rows)


def grades() -> dict[str, pd.DataFrame]:
    rows = [{"grain": "chunk", "kind": "all", "rank": rank, "grade": grade, "share": 0.25}
            for rank in range(1, 11) for grade in ("0", "1", "2", "3")]
    return {method: pd.DataFrame(rows) for method in METHODS}


def top1() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame([{"method": m, "qid": f"q{i}", "score": float(rng.random()), "answerable": i % 5 != 0}
                         for m in METHODS for i in range(30)])


def history(runs: int) -> pd.DataFrame:
    return pd.DataFrame([{"qset": qset, "run": run, "date": f"2026-12-0{run}T00:00:00Z", "label": "x",
                          "method": m, "rr@10": 0.5 + 0.01 * i} for qset in ("v1", "v2") for run in range(1, runs + 1)
                         for i, m in enumerate(METHODS)])


FIGURES = {
    "recall": lambda: recall_curves(aggregate(), "chunk", "recall", "bm25"),
    "bars": lambda: metric_bars(aggregate(), "chunk", "rr", 10, "bars"),
    "kinds": lambda: kind_heatmap(aggregate(), "chunk", "ndcg", 10, "kinds"),
    "grades": lambda: mean_grade_by_rank(grades(), "chunk", "grades", "bm25"),
    "calibration": lambda: top1_distributions(top1(), "calibration"),
    "history": lambda: history_plot(history(3), "rr@10", "history"),
    "history-one-run": lambda: history_plot(history(1), "rr@10", "history"),
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_figure_fits_a_1200_px_page_at_a_sensible_aspect_ratio(name: str, tmp_path: Path) -> None:
    save(FIGURES[name](), tmp_path / "f.png", tmp_path / "f.svg")
    width, height = Image.open(tmp_path / "f.png").size
    assert 500 <= width <= 1200, (width, height)
    assert 0.6 <= width / height <= 2.5, (width, height)


def _lines_per_panel(figure: Figure) -> list[int]:
    return [len(axis.get_lines()) for axis in figure.axes if axis.get_visible()]


@pytest.mark.parametrize("name", ["recall", "grades"])
def test_a_panel_draws_one_method_and_the_baseline(name: str) -> None:
    figure = FIGURES[name]()
    assert len(_lines_per_panel(figure)) == len(METHODS)
    assert max(_lines_per_panel(figure)) <= 2


def test_a_single_run_history_draws_bars_not_lone_dots() -> None:
    figure = FIGURES["history-one-run"]()
    panels = [axis for axis in figure.axes if axis.get_visible()]
    assert len(panels) == 2
    for axis in panels:
        assert not axis.get_lines() and len(axis.patches) == len(METHODS)
        assert "one run so far" in axis.get_title()


LONG = [f"bm25+rerank-cross-encoder-ms-marco-minilm-l6-v2-with-a-long-suffix[depth={d}]" for d in (10, 20, 30)] + [
    f"dense-e5-hnsw[ef={e}]" for e in range(10, 170, 10)]


@pytest.mark.parametrize("qsets", [("v1",), ("v1", "v2"), ("v1", "v2", "v3")])
def test_the_history_legend_is_whole_and_covers_no_panel(qsets: tuple[str, ...], tmp_path: Path) -> None:
    """Issue 55: the history plot's legend, beside each panel, was cut at the figure's edge (and covered the next
    panel). Long method names, many methods: every method is in the legend, which lies inside the saved figure and
    on no panel, as does every text."""
    frame = pd.DataFrame([{"qset": qset, "run": run, "date": f"2026-12-0{run}T00:00:00Z", "label": "x",
                           "method": m, "rr@10": 0.5 + 0.01 * i} for qset in qsets for run in (1, 2, 3)
                          for i, m in enumerate(LONG)])
    figure = history_plot(frame, "rr@10", "history")
    save(figure, tmp_path / "f.png", tmp_path / "f.svg")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    inside = figure.bbox.padded(1)
    legends = [legend for axis in figure.axes for legend in [axis.get_legend()] if legend] + figure.legends
    panels = [axis for axis in figure.axes if axis.get_visible() and axis.axison]
    assert len(panels) == len(qsets)
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1), (box, figure.bbox)
        assert not any(box.overlaps(axis.get_window_extent(renderer)) for axis in panels if axis is not legend.axes)
    assert len(legends) == 1 and [t.get_text() for t in legends[0].get_texts()] == sorted(LONG)
    drawn = figure.get_tightbbox(renderer).transformed(figure.dpi_scale_trans)  # inches -> pixels: all it draws
    assert inside.contains(drawn.x0, drawn.y0) and inside.contains(drawn.x1, drawn.y1), (drawn, figure.bbox)
