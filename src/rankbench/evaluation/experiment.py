"""Runs scored and compared outside the workflow, from TREC or Parquet files, DataFrames or dicts: the functions
behind `rankbench.evaluate`, `rankbench.compare` and `rankbench eval` (trec_eval's numbers, the workflow's stats)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rankbench.errors import InputError
from rankbench.evaluation import rendering
from rankbench.evaluation.metric_names import (
    MetricNameError,
    metric_text,
    parse_metrics,
    persistence,
    split_metric_list,
)
from rankbench.evaluation.metrics import grade_problem
from rankbench.evaluation.scoring import BASELINE_COLUMNS, runs_per_query, summarize
from rankbench.io.adapters import run_name
from rankbench.io.ranked_lists import unmatched
from rankbench.io.trec import QrelsSource, RunSource, read_qrels, read_run

DEFAULT_METRICS = ("ndcg@10", "recall@100", "rr@10", "ap@100")
SUMMARY_COLUMNS = ["method", "metric", "k", "mean", "ci_low", "ci_high", "n", "n_excluded"] + BASELINE_COLUMNS
UNMATCHED_HINT = ("A workflow run at chunk grain (runs/<method>.chunks.trec) holds chunk ids: score "
                  "runs/<method>.docs.trec against document qrels, or the Parquet run with --grain chunk.")


class UnmatchedRunWarning(UserWarning):
    """A run scores 0 on every metric whatever its order: it is empty or shares no question or id with the qrels."""


@dataclass(frozen=True)
class Evaluation:
    """One run's scores: ``per_query`` is indexed by qid with one column per metric, named as asked (questions
    without a relevant label left out; a labelled question missing from the run scores 0, as trec_eval -c);
    ``means`` their means; ``n_excluded`` the questions of the qrels left out. Renders with CIs as a frame,
    Markdown, LaTeX or HTML (notebooks)."""

    per_query: pd.DataFrame
    means: pd.Series
    n_excluded: int

    def to_frame(self, n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
        """One row per metric: mean, 95% bootstrap CI over the questions, n."""
        return rendering.evaluation_frame(self.per_query, n_resamples, seed)

    def _note(self) -> str:
        return (f"Mean [95% bootstrap CI] over {len(self.per_query)} questions; {self.n_excluded} without a "
                "relevant label excluded.")

    def to_markdown(self) -> str:
        return rendering.markdown(rendering.evaluation_cells(self.to_frame()), self._note())

    def to_latex(self, caption: str | None = None) -> str:
        return rendering.latex(rendering.evaluation_cells(self.to_frame()), caption or self._note())

    def _repr_html_(self) -> str:
        return rendering.html_table(rendering.evaluation_cells(self.to_frame()), self._note())


@dataclass(frozen=True)
class Comparison:
    """Runs compared on the questions they evaluate: ``summary`` (SUMMARY_COLUMNS: mean with its 95% bootstrap CI
    per run and metric, and against the baseline the difference with its CI, d_z, randomization and t-test p, Holm
    over the runs, W/T/L), ``pairs`` (every pair of runs, stats.COMPARISON_COLUMNS, Holm over all pairs of a
    metric) and ``per_query`` (method, qid, metric, k, value). Renders as the workflow's tables do (CIs, best bold,
    ↑/↓ Holm-significant vs the baseline, ° within one question's worth): frame, Markdown, LaTeX or HTML."""

    summary: pd.DataFrame
    pairs: pd.DataFrame
    per_query: pd.DataFrame
    baseline: str | None
    grain: str = "document"

    def to_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """The summary with the workflow tables' marks: significant (↑/↓ vs the baseline, Holm), near, best."""
        return rendering.comparison_frame(self.summary, self.grain, alpha)

    def to_markdown(self, alpha: float = 0.05) -> str:
        return rendering.markdown(rendering.comparison_cells(self.summary, self.grain, alpha),
                                  rendering.comparison_note(self.baseline, alpha, self.grain))

    def to_latex(self, alpha: float = 0.05, caption: str | None = None) -> str:
        cells = rendering.comparison_cells(self.summary, self.grain, alpha, latex=True)
        return rendering.latex(cells, caption or rendering.comparison_note(self.baseline, alpha, self.grain))

    def _repr_html_(self) -> str:
        return rendering.html_table(rendering.comparison_cells(self.summary, self.grain, 0.05),
                                    rendering.comparison_note(self.baseline, 0.05, self.grain))


def metric_list(metrics: object) -> tuple[list[str], list[tuple[str, int]], float | None]:
    """The names as given ('ndcg@10,P_5', ['ndcg@10', 'P_5'], ir_measures objects such as nDCG@10), their
    (metric, k) and RBP's persistence when a name gives one (RBP(p=0.9)); unknown names raise, listing the known."""
    items = metrics if isinstance(metrics, (list, tuple)) else [metrics]
    try:
        names = [part.strip() for item in items for part in split_metric_list(metric_text(item)) if part.strip()]
        return names, parse_metrics(",".join(names)), persistence(names)
    except MetricNameError as error:
        raise InputError(None, "metrics", str(error), "Name each metric as rankbench, trec_eval, ir_measures or ranx "
                         "do (ndcg@10, ndcg_cut_10, nDCG@10, ir_measures.nDCG@10, hit_rate@1).") from None


def _checked_qrels(qrels: QrelsSource, metrics: Sequence[tuple[str, int]], grain: str,
                   relevance_threshold: int) -> pd.DataFrame:
    """The qrels read and checked against what the metrics need, before any run is read or scored."""
    frame = read_qrels(qrels, grain)
    source = qrels if isinstance(qrels, (str, Path)) else None
    if not (frame["grade"] >= relevance_threshold).any():
        raise InputError(source, None, f"has no label with grade >= {relevance_threshold}, so no question can be "
                         "evaluated", "Check the grades, or lower the relevance threshold.")
    problem = grade_problem(frame, [metric for metric, _ in metrics])
    if problem:
        raise InputError(source, None, problem, "Leave that metric out, or map the grades onto its range.")
    return frame


def _checked_runs(runs: Mapping[str, RunSource], qrels: pd.DataFrame, grain: str, strict: bool
                  ) -> dict[str, pd.DataFrame]:
    """Each run read; one that cannot score above 0 is refused (strict) or named in an UnmatchedRunWarning."""
    id_column = "doc_id" if grain == "document" else "chunk_id"
    read = {}
    for name, source in runs.items():
        run = read_run(source, name=f"run {name!r}")
        problem = unmatched(run, qrels, id_column)
        hint = "Check that the file is the run you meant." if run.empty else UNMATCHED_HINT
        where = source if isinstance(source, (str, Path)) else f"run {name!r}"
        if problem and strict:
            raise InputError(where, None, f"{problem}; every metric would be 0", hint)
        if problem:
            warnings.warn(f"run {name} ({where}) {problem}; it scores 0 on every metric. {hint}",
                          UnmatchedRunWarning, stacklevel=3)
        read[name] = run
    return read


def compare(qrels: QrelsSource, runs: Mapping[str, RunSource], metrics: object = DEFAULT_METRICS,
            baseline: str | None = None, *, grain: str = "document", relevance_threshold: int = 1,
            gain: str = "linear", rbp_p: float = 0.8, n_resamples: int = 10_000, seed: int = 0,
            strict: bool = False) -> Comparison:
    """Score named runs (files, DataFrames or {qid: {doc_id: score}} dicts) against qrels and compare them.

    Metrics by trec_eval's or our names (ndcg@10, P_5, map, recip_rank, Rprec, bpref, ...). Every pair is tested
    on the questions both runs evaluate; with a baseline, the summary holds each run's comparison with it. A run
    that matches no label warns (UnmatchedRunWarning), or raises with ``strict``.
    """
    if not runs:
        raise InputError(None, "runs", "is empty", "Give at least one run, e.g. {'bm25': 'bm25.trec'}.")
    if baseline is not None and baseline not in runs:
        raise InputError(None, "baseline", f"names {baseline!r}, which is not a run", f"Use one of: {', '.join(runs)}.")
    _, parsed, named_p = metric_list(metrics)
    rbp_p = rbp_p if named_p is None else named_p
    frame = _checked_qrels(qrels, parsed, grain, relevance_threshold)
    read = _checked_runs(runs, frame, grain, strict)
    per_query = runs_per_query(read, frame, parsed, grain=grain, relevance_threshold=relevance_threshold, gain=gain,
                               rbp_p=rbp_p)
    summary, pairs = summarize(per_query, [], baseline, n_resamples=n_resamples, seed=seed)
    summary = summary.assign(n_excluded=frame["qid"].nunique() - summary["n"])
    order = {key: i for i, key in enumerate(dict.fromkeys(parsed))}
    summary = summary.assign(_metric=[order[(m, k)] for m, k in zip(summary["metric"], summary["k"])],
                             _method=summary["method"].map({m: i for i, m in enumerate(runs)}))
    summary = summary.sort_values(["_metric", "_method"], kind="stable", ignore_index=True)[SUMMARY_COLUMNS]
    return Comparison(summary, pairs, per_query, baseline, grain)


def evaluate(qrels: QrelsSource, run: RunSource, metrics: object = DEFAULT_METRICS, *,
             grain: str = "document", relevance_threshold: int = 1, gain: str = "linear", rbp_p: float = 0.8
             ) -> Evaluation:
    """Score one run (file, DataFrame or {qid: {doc_id: score}}) against qrels, question by question, as trec_eval."""
    names, parsed, named_p = metric_list(metrics)
    rbp_p = rbp_p if named_p is None else named_p
    frame = _checked_qrels(qrels, parsed, grain, relevance_threshold)
    name = Path(run).stem if isinstance(run, (str, Path)) else run_name(run) or "run"
    read = _checked_runs({name: run}, frame, grain, strict=False)
    long = runs_per_query(read, frame, parsed, grain=grain, relevance_threshold=relevance_threshold, gain=gain,
                          rbp_p=rbp_p)
    wide = long.set_index(["qid", "metric", "k"])["value"].unstack(["metric", "k"]).sort_index()
    per_query = pd.DataFrame({name: wide[key] for name, key in zip(names, parsed)}).rename_axis("qid")
    return Evaluation(per_query, per_query.mean(), frame["qid"].nunique() - len(per_query))
