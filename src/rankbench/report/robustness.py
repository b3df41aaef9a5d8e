"""The robustness page and its sentences: whether the verdict survives dropped or shifted labels, the metric
bounds for unjudged items and the judge-corrected metrics (from analysis/robustness.py's tables)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rankbench.evaluation.metric_names import metric_label
from rankbench.io.markdown import markdown_grid

PHRASES = {"drop labels": "with {:.0%} of the labels dropped", "shift grades": "with {:.0%} of the grades moved by one",
           "LLM labels": "with the LLM judge's grades in place of people's on its pool ({:.0%} of the labels regraded)"}


NOT_APPLICABLE = "not applicable (no LLM judgements for this version)"


def survival_sentence(rows: pd.DataFrame) -> str:
    """One headline metric's survival over its perturbations, in words (the LLM judge's swap, one repetition,
    in a sentence of its own)."""
    def detail(row: Any) -> str:
        return (f"(τ to the original ranking ≥ {row.tau_min:.2f}"
                + ("" if np.isnan(row.marks_survive) else f", marks unchanged {row.marks_survive:.0%}") + ")")

    noise = rows[rows["perturbation"] != "LLM labels"]
    text = (f"{metric_label(rows['metric'].iloc[0], rows['k'].iloc[0])}: the winner {rows['best'].iloc[0]} stays "
            "first in " + " and in ".join(f"{row.best_survives:.0%} of repetitions "
                                          f"{PHRASES[row.perturbation].format(row.level)} {detail(row)}"
                                          for row in noise.itertuples()) + ".")
    for row in rows[rows["perturbation"] == "LLM labels"].itertuples():
        phrase = PHRASES[row.perturbation].format(row.level)
        text += (f" {phrase[0].upper() + phrase[1:]}, it "
                 f"{'stays' if row.best_survives == 1 else 'does not stay'} first {detail(row)}.")
    return text


def bounds_sentence(rows: pd.DataFrame) -> str:
    """The method of one headline metric with the most unjudged items in its top k, with its metric bounds (or why
    the metric has none)."""
    worst = rows.sort_values(["unjudged_share", "method"], ascending=[False, True], kind="stable").iloc[0]
    label = metric_label(worst["metric"], worst["k"])
    share = f"{worst['unjudged_share']:.0%} of {worst['method']}'s top {worst['k']} are unjudged"
    if np.isnan(worst["lower"]):
        return f"{label}: {share} ({UNBOUNDED})."
    return f"{label}: {share}, bounds {worst['lower']:.3f}–{worst['upper']:.3f}."


UNBOUNDED = "no bound: it divides by an ideal that grows with every item turned relevant, so it can move either way"


def headline_findings(survival: pd.DataFrame, bounds: pd.DataFrame) -> list[str]:
    """The comparison page's sentence: survival and unjudged bounds of the first headline metric (none without
    a second method to rank against)."""
    if survival.empty or bounds["method"].nunique() < 2:
        return []
    metric, k = survival["metric"].iloc[0], survival["k"].iloc[0]
    rows = survival[(survival["metric"] == metric) & (survival["k"] == k)]
    limits = bounds[(bounds["metric"] == metric) & (bounds["k"] == k)]
    return [f"Label noise — {survival_sentence(rows)} {bounds_sentence(limits)} More on the "
            "[robustness page](robustness.html)."]


def corrected_section(corrected: pd.DataFrame | None) -> list[str]:
    """The page's judge-corrected metrics: per headline metric, human-only, judge-only and PPI++ with their CIs."""
    lines = ["## LLM judge: swapped labels and judge-corrected metrics", ""]
    if corrected is None:
        return lines + [f"Swapping people's labels for an LLM judge's, and judge-corrected metrics: {NOT_APPLICABLE}. "
                        "They appear here once the `llm` target has judged this version (`llm.judge.qsets`).", ""]
    lines += ["The judge graded a pool (`llm/judgements.parquet`). *Survival* above has a row where its grades "
              "replace people's on that pool. Below, per method: the mean on people's labels over the questions "
              "whose pooled items people all graded (human), on the judge's grades over every question (judge, "
              "biased as far as the judge is), and the prediction-powered estimate (PPI++: the judge's values "
              "everywhere, corrected by the fully labelled questions; λ weighs the judge, 0 = human-only). "
              "95% normal CIs. PPI assumes the fully labelled questions are like the others (a random subset).", ""]
    if corrected.empty:
        return lines + ["No method has 2 or more fully labelled questions: nothing to estimate.", ""]
    if (corrected["n_unlabelled"] < 2).all():
        lines += ["People graded every pooled item of (almost) every question, so the judge has nothing to add: "
                  "the PPI estimate is the human-only one (λ = 0).", ""]
    for (metric, k), rows in corrected.groupby(["metric", "k"], sort=False):
        wide = rows.pivot(index="method", columns="estimator")
        cell = {e: [f"{v:.3f} ({lo:.3f}–{hi:.3f})" for v, lo, hi in zip(wide[("estimate", e)], wide[("ci_low", e)],
                                                                          wide[("ci_high", e)])]
                for e in ("human", "judge", "ppi")}
        table = pd.DataFrame({"human only": cell["human"], "judge only": cell["judge"], "PPI": cell["ppi"],
                              "λ": wide[("weight", "ppi")].map("{:.2f}".format).to_numpy(),
                              "questions labelled / not": [f"{a} / {b}" for a, b in zip(
                                  wide[("n_labelled", "ppi")], wide[("n_unlabelled", "ppi")])]},
                             index=wide.index)
        lines += [f"### {metric_label(metric, k)}", "", markdown_grid(table), ""]
    return lines


def robustness_page(survival: pd.DataFrame, bounds: pd.DataFrame, dataset: str, qset: str,
                    corrected: pd.DataFrame | None = None) -> str:
    """The robustness page: one sentence per headline metric, the survival table, the unjudged bounds and the LLM
    judge's section (corrected: None when the version has no LLM judgements)."""
    lines = [f"# {dataset} — question-set version {qset}: does the verdict survive label noise?", "",
             "The runs are scored again on perturbed labels with the same metric code, over all questions: a share "
             "of the labels dropped, or each grade moved up or down by one with some probability (seeded "
             "repetitions). Best survives: the original best method still has the highest mean (ties count); "
             "τ: Kendall's tau between the perturbed and the original ranking of the methods by mean; marks "
             "survive: each method's mark against the baseline (better, worse or not significant after Holm, "
             "randomization test) is unchanged. Bounds: the tables count unjudged items as not relevant (reported); "
             "the bounds let each unjudged item in the top k of any method be not relevant or just relevant. "
             "Upper: the method's own unjudged top-k items relevant, the others not; lower: the reverse (for hit, "
             "P, MRR and DCG this is the reported value; recall falls as relevant items outside the top k grow "
             "what it divides by). Every such labelling gives a value between the two. nDCG, AP and the other "
             f"metrics have none ({UNBOUNDED}).", "", "## Findings", ""]
    lines += [f"- {survival_sentence(rows)}" for _, rows in survival.groupby(["metric", "k"], sort=False)]
    lines += [f"- {bounds_sentence(rows)}" for _, rows in bounds.groupby(["metric", "k"], sort=False)]
    frame = pd.DataFrame({
        "metric": [metric_label(m, k) for m, k in zip(survival["metric"], survival["k"])],
        "perturbation": [f"{p} {level:.0%}" for p, level in zip(survival["perturbation"], survival["level"])],
        "repetitions": survival["repetitions"].to_numpy(), "best": survival["best"].to_numpy(),
        "best survives": survival["best_survives"].map("{:.2f}".format).to_numpy(),
        "τ mean": survival["tau_mean"].map("{:.2f}".format).to_numpy(),
        "τ min": survival["tau_min"].map("{:.2f}".format).to_numpy(),
        "marks": survival["marks"].to_numpy(),
        "marks survive": survival["marks_survive"].map(lambda v: "–" if np.isnan(v) else f"{v:.2f}").to_numpy(),
    }).set_index("metric")
    grain = next(iter(survival["grain"]), next(iter(bounds["grain"]), "document"))
    lines += ["", f"## Survival ({grain} grain)", "", markdown_grid(frame), "",
              f"## Bounds for unjudged items ({grain} grain)", ""]
    for (metric, k), rows in bounds.groupby(["metric", "k"], sort=False):
        table = pd.DataFrame({"unjudged in top k": rows["unjudged_share"].map("{:.0%}".format).to_numpy(),
                              "lower": rows["lower"].map("{:.3f}".format).to_numpy(),
                              "reported": rows["reported"].map("{:.3f}".format).to_numpy(),
                              "upper": rows["upper"].map("{:.3f}".format).to_numpy()},
                             index=pd.Index(rows["method"], name="method"))
        unbounded = bool(rows["lower"].isna().all())  # the metric has none: said once, not in every cell
        lines += [f"### {metric_label(metric, k)}", "", *([f"No bounds ({UNBOUNDED}).", ""] if unbounded else []),
                  markdown_grid(table.drop(columns=["lower", "upper"]) if unbounded else table), ""]
    return "\n".join(lines + corrected_section(corrected))
