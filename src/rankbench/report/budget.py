"""The budget page and its sentences: how many questions would separate the pairs that matter (from
analysis/budget.py's table)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.analysis.budget import MAX_SIMULATED, POWER, PRACTICAL_TIE, SIMULATIONS
from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.io.markdown import markdown_grid


def _count(value: float) -> str:
    return "–" if np.isnan(value) else f"{int(value):,}"


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
    return [f"{finding(row)} Per kind and against the baseline: `budget.md`." for _, row in rows.head(1).iterrows()]


def budget_page(table: pd.DataFrame, dataset: str, qset: str, alpha: float) -> str:
    """The budget page: how it is computed, one sentence per best-vs-runner-up finding, then the full table."""
    lines = [f"# {dataset} — question-set version {qset}: how many questions you need", "",
             f"For each headline metric and question kind: the best method against the runner-up and every method "
             f"against the baseline. α = {alpha:g} divided by the size of the pair's Holm family (the pairs with "
             f"the best, as the tiers, or with the baseline; Holm's first step; later steps are looser), power "
             f"{POWER:g}. mdd: the smallest true difference the current "
             "questions detect (paired t-test formula from the sd of the per-query differences). Questions needed: "
             "the formula's count, then checked by simulation — experiments of n questions drawn with replacement "
             f"from the observed differences, {SIMULATIONS} per n, the smallest n reaching the power (the formula "
             f"alone above {MAX_SIMULATED}). Metric differences are not normal, so the two can differ.", "",
             "## Best against runner-up", ""]
    lines += [f"- {finding(row)}" for _, row in table[table["pair"] == "best vs runner-up"].iterrows()]
    frame = pd.DataFrame({
        "metric": [metric_label(m, k) for m, k in zip(table["metric"], table["k"])],
        "kind": table["kind"].to_numpy(), "pair": (table["method_a"] + " − " + table["method_b"]).to_numpy(),
        "n": table["n"].to_numpy(), "Δ": table["diff"].map("{:+.3f}".format).to_numpy(),
        "sd": table["sd"].map("{:.3f}".format).to_numpy(), "α": table["alpha"].map("{:.4f}".format).to_numpy(),
        "mdd": table["mdd"].map(lambda v: "–" if np.isnan(v) else f"{v:.3f}").to_numpy(),
        "needed (formula)": table["n_needed_normal"].map(_count).to_numpy(),
        "needed (simulated)": [(_count(n) if s else "–") for n, s in zip(table["n_needed"], table["simulated"])],
    })
    lines += ["", "## All pairs that matter", ""]
    for pair in ("best vs runner-up", "vs baseline"):
        part = frame[(table["pair"] == pair).to_numpy()]
        if len(part):
            lines += [f"### {pair}", "", markdown_grid(part.set_index("metric")), ""]
    return "\n".join(lines)
