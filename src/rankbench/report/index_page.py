"""The entry page of a dataset's results (results/<dataset>/index.html): every question-set version with its
headline (best method per headline metric beside the baseline) and links to the pages the run wrote."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS, question_kinds
from rankbench.io.audience import audience_line
from rankbench.io.markdown import markdown_grid, markdown_literal
from rankbench.report.decision import decision_lines
from rankbench.report.pages import markdown_html

# Each version's pages in reading order: file name beside the version's folder -> what it answers.
VERSION_PAGES = {
    "comparison.html": "comparison: which method finds the evidence, and is the difference real",
    "breakdowns.html": "breakdowns: every metric per question kind, per tag and per difficulty",
    "explorer.html": "explorer: every question, what each method returned",
    "failures.html": "failures: the questions each method misses",
    "budget.html": "budget: how many questions would separate the methods",
    "robustness.html": "robustness: does the verdict survive label noise",
    "calibration.html": "calibration: can a score threshold tell answerable questions apart",
    "cost.html": "cost: seconds per question beside quality",
    "vector-size.html": "vector size: how small the dense index can be before quality drops",
}
# Each version's plots (SVG), linked on one line under its pages: file -> what it shows.
VERSION_PLOTS = {
    "plots/bars.svg": "bars: the plot metric of each method with its 95% CI",
    "plots/recall.svg": "recall: recall@k of each method as k grows",
    "plots/kinds.svg": "kinds: the plot metric by method and question kind",
    "plots/grades.svg": "grades: the mean grade at each rank",
    "plots/calibration.svg": "calibration: top-1 scores of answerable and unanswerable questions",
}
QUICK_NOTE = ("This quick run (`rankbench run --quick`) built each version's comparison page only: the explorer, "
              "failures, budget, robustness, calibration and cost pages, the plots, the diffs between versions and the "
              "history are absent. `rankbench run` (without `--quick`) builds them.")


@dataclass(frozen=True)
class VersionEntry:
    """One question-set version: its manifest fields, its aggregate and the page files it has."""

    qset: str
    sha256: str
    questions: int
    aggregate: pd.DataFrame
    pages: Sequence[str]
    draft: bool = False
    pairs: pd.DataFrame | None = None
    recommended: str = ""  # the version's recommended.md (report/recommend.py's box), shown first


def headline_rows(aggregate: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]],
                  baseline: str | None) -> pd.DataFrame:
    """Per headline metric (all questions, at `grain`): the method(s) with the highest mean, that mean and the
    baseline's."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS)]
    frame = pd.DataFrame(columns=["metric", "highest mean", "mean", "baseline"]).set_index("metric")
    for metric, k in headline:
        values = rows[(rows["metric"] == metric) & (rows["k"] == k)].set_index("method")["mean"]
        if values.empty:
            continue
        top = values.max()
        best = ", ".join(markdown_literal(m) for m in sorted(values[values == top].index))
        base = f"{values[baseline]:.3f}" if baseline in values.index else "–"
        frame.loc[metric_label(metric, k)] = [best, f"{top:.3f}", base]
    return frame.rename(columns={"baseline": f"baseline ({baseline})" if baseline else "baseline"})


def evaluated(aggregate: pd.DataFrame, grain: str) -> int:
    """Questions with a relevant label at this grain (the aggregate's largest n over all questions)."""
    n = aggregate.loc[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS), "n"]
    return int(n.max()) if len(n) else 0


def index_page(dataset: str, versions: Sequence[VersionEntry], diffs: Sequence[str], history: bool,
               report: Mapping[str, Any], baseline: str | None, decision: Mapping[str, Any] | None = None,
               quick: bool = False) -> str:
    """The entry page as a standalone HTML document (relative links only, nothing loaded from the network); with a
    version's pairs and `decision` (types, inputs, settings: the comparison page's), its answer and what to do
    first; a quick run's says which pages it lacks and how to build them."""
    grain = str(report["grain"])
    headline = [(str(m), int(k)) for m, k in report["headline"]]
    lines = [f"# {markdown_literal(dataset)}: results", "", *audience_line(dict(report)),
             f"Every question-set version of this dataset: the answer (the best method or the methods tied with it, "
             f"how sure) and what to do, its headline ({grain} grain, all questions: the method with the highest "
             "mean per metric beside the baseline) and the pages this run wrote for it.", ""]
    for entry in versions:
        draft = " (draft: not frozen)" if entry.draft else ""
        lines += [f"## Question-set version {markdown_literal(entry.qset)}{draft}", "",
                  f"{entry.questions} questions, {evaluated(entry.aggregate, grain)} with a relevant label "
                  f"(evaluated); sha256 `{entry.sha256[:12]}`.", ""]
        if entry.recommended:
            lines += ["### Recommended configuration", "", entry.recommended.rstrip("\n"), ""]
        if entry.pairs is not None and decision is not None:
            lines += decision_lines(entry.aggregate, entry.pairs, grain, headline, float(report["alpha"]),
                                    decision["types"], decision["inputs"], decision["settings"], level=3,
                                    links=f"{entry.qset}/")
        table = headline_rows(entry.aggregate, grain, headline, baseline)
        if len(table):
            lines += [markdown_grid(table), ""]
        lines += [f"- [{VERSION_PAGES[page].split(':')[0]}]({entry.qset}/{page}):"
                  f"{VERSION_PAGES[page].split(':', 1)[1]}" for page in VERSION_PAGES if page in entry.pages]
        # the per-kind heatmap only with two kinds or more, as on the comparison page
        shown = [plot for plot in VERSION_PLOTS if plot in entry.pages
                 and (plot != "plots/kinds.svg" or len(question_kinds(entry.aggregate)) > 1)]
        plots = [f"[{VERSION_PLOTS[plot].split(':')[0]}]({entry.qset}/{plot}) ({VERSION_PLOTS[plot].split(': ', 1)[1]})"
                 for plot in shown]
        lines += [f"- plots: {'; '.join(plots)}"] if plots else []
        lines.append("")
    if quick:
        lines += [QUICK_NOTE, ""]
    if diffs:
        lines += ["## Between versions", ""]
        lines += [f"- [{markdown_literal(name.removesuffix('.html'))}](diffs/{name}): questions, labels and "
                  "metrics that changed" for name in diffs]
        lines.append("")
    if history:
        lines += ["## Over time", "", "- [history](history.html): the headline metrics of every recorded run", ""]
    return markdown_html("\n".join(lines), f"{dataset} results")
