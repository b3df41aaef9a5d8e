"""The budget page and its sentences: how many questions would separate the pairs that matter (from
analysis/budget.py's table), led by one table of pairs × headline metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.analysis.budget import MAX_SIMULATED, POWER, PRACTICAL_TIE, SIMULATIONS
from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.io.markdown import markdown_grid


def _count(value: float) -> str:
    return "–" if np.isnan(value) else "∞" if np.isinf(value) else f"{int(value):,}"


def finding(row: pd.Series) -> str:
    """One sentence: what it takes to separate the pair on this kind of question."""
    questions = "questions" if row["kind"] == ALL_KINDS else f"{row['kind']} questions"
    where = "" if row["kind"] == ALL_KINDS else f" on {row['kind']} questions"
    label = metric_label(row["metric"], row["k"])
    if np.isnan(row["n_needed"]):
        return (f"{row['method_a']} and {row['method_b']} tie on {label}{where} (Δ = 0 over your {row['n']} "
                f"{questions}): there is no difference for more questions to detect.")
    if row["n_needed"] > PRACTICAL_TIE * row["n"]:
        return (f"{row['method_a']} and {row['method_b']} are practically tied on {label}{where} "
                f"(Δ = {row['diff']:+.3f}): separating them would take about {_count(row['n_needed'])} {questions}, "
                f"more than {PRACTICAL_TIE} times the {row['n']} you have.")
    more = "" if row["simulated"] else f" (more than {MAX_SIMULATED:,}: the normal formula's estimate)"
    verdict = "enough" if row["n_needed"] <= row["n"] else "not enough"
    return (f"To separate {row['method_a']} from {row['method_b']} on {label}{where} (Δ = {row['diff']:+.3f}) you "
            f"need about {_count(row['n_needed'])} {questions}{more}; you have {row['n']} ({verdict}).")


def headline_findings(table: pd.DataFrame) -> list[str]:
    """The comparison page's sentence: the first headline metric's best against its runner-up, all questions (none
    with a single method)."""
    rows = table[(table["kind"] == ALL_KINDS) & (table["pair"] == "best vs runner-up")]
    return [f"{finding(row)} Per kind and against the baseline: the [budget page](budget.html)."
            for _, row in rows.head(1).iterrows()]


def needed_cell(row: pd.Series) -> str:
    """One cell of the lead table: Δ, then the questions needed (✓ when the version has enough), `tie` when there is
    no difference, `practically tied` beyond PRACTICAL_TIE times the questions at hand."""
    if np.isnan(row["n_needed"]):
        return "tie (Δ = 0)"
    estimate = "" if row["simulated"] else " (formula)"
    cell = f"{row['diff']:+.3f}: {_count(row['n_needed'])}{estimate}"
    if row["n_needed"] > PRACTICAL_TIE * row["n"]:
        return f"{cell}, practically tied"
    return f"{cell} ✓" if row["n_needed"] <= row["n"] else cell


def decisive(row: pd.Series) -> bool:
    """A finding that changes a decision: not an exact tie (more questions detect nothing there)."""
    return not np.isnan(row["n_needed"])


def budget_page(table: pd.DataFrame, dataset: str, qset: str, alpha: float) -> str:
    """The budget page: one table of questions needed (pair × headline metric, all questions), the sentences that
    change a decision, best against runner-up per question kind; every row with its statistics is budget.parquet."""
    grain = table["grain"].iloc[0] if len(table) else "document"
    metrics = list(dict.fromkeys(metric_label(m, k) for m, k in zip(table["metric"], table["k"])))
    labelled = table.assign(label=[metric_label(m, k) for m, k in zip(table["metric"], table["k"])],
                            cell=[needed_cell(row) for _, row in table.iterrows()])
    overall = labelled[labelled["kind"] == ALL_KINDS]
    n = int(overall["n"].max()) if len(overall) else 0
    lines = [f"# {dataset} — question-set version {qset}: how many questions you need", "",
             f"Questions needed to separate two methods at power {POWER:g}, {grain} grain: cells read `Δ: "
             f"questions needed` (✓: your questions suffice). α = {alpha:g} divided by the pair's Holm family (the "
             "pairs with the best, or with the baseline; Holm's first step). Counts come from simulated experiments "
             f"of n questions drawn with replacement from the observed per-question differences ({SIMULATIONS} per "
             f"n), or from the paired t-test formula above {MAX_SIMULATED:,} questions (marked `formula`). "
             f"Practically tied: more than {PRACTICAL_TIE} times the questions you have.", ""]
    if overall.empty:
        return "\n".join(lines + ["One method: there is no pair to separate.", ""])
    best = overall[overall["pair"] == "best vs runner-up"]
    rows = {"best − runner-up": {r["label"]: f"{r['method_a']} − {r['method_b']} {r['cell']}" if decisive(r)
                                 else "tie at the top (Δ = 0)" for _, r in best.iterrows()}}
    for _, r in overall[overall["pair"] == "vs baseline"].iterrows():
        rows.setdefault(f"{r['method_a']} − {r['method_b']}", {})[r["label"]] = r["cell"]
    grid = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=metrics).fillna("–")
    grid.index.name = f"pair (all {n} questions)"
    lines += [f"## Questions needed ({grain} grain, all questions)", "", markdown_grid(grid), ""]
    sentences = [f"- {finding(row)}" for _, row in best.iterrows() if decisive(row)]
    if sentences:
        lines += ["## What the questions decide (all questions)", "", *sentences, ""]
    kinds = labelled[(labelled["kind"] != ALL_KINDS) & (labelled["pair"] == "best vs runner-up")]
    if len(kinds):
        per_kind = kinds.assign(text=[f"{r['method_a']} − {r['method_b']} {r['cell']}" if decisive(r)
                                      else "tie at the top (Δ = 0)" for _, r in kinds.iterrows()])
        by_kind = per_kind.pivot(index="kind", columns="label", values="text").reindex(columns=metrics).fillna("–")
        by_kind.index = [f"{kind} (n={count})" for kind, count in
                         zip(by_kind.index, kinds.groupby("kind")["n"].max().reindex(by_kind.index))]
        by_kind.index.name = "kind"
        lines += [f"## Best against runner-up per question kind ({grain} grain)", "", markdown_grid(by_kind), ""]
    lines += ["Every pair and kind with its sd, α, mdd (the smallest difference your questions detect) and the "
              "formula's count beside the simulated one: `budget.parquet`.", ""]
    return "\n".join(lines)
