"""The verdict and "What to do" in words: the opening of the comparison page and of index.html (the rules and
their evidence computed in analysis/decision.py; the rule table is docs/concepts/report.md's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankbench.analysis.budget import PRACTICAL_TIE
from rankbench.analysis.decision import Advice, BudgetChoice, Comparison, Verdict, advice, budget_choice, verdict
from rankbench.analysis.recommend import share_bounds
from rankbench.analysis.recommend_axes import grid_point
from rankbench.evaluation.metric_names import metric_label
from rankbench.io.markdown import markdown_literal


def _p(p: float) -> str:
    return "Holm p < 0.001" if p < 0.001 else f"Holm p = {p:.3f}"


def evidence(c: Comparison) -> str:
    """Δ with its CI, the Holm p and W/T/L of one comparison; then why the CI and the p disagree when they do, and
    the family the p is adjusted over (which comparisons, how many) and how it would change with more."""
    text = (f"Δ {c.diff:+.3f} (95% CI {c.diff_low:+.3f} to {c.diff_high:+.3f}), {_p(c.p_holm)}, W/T/L "
            f"{c.wins}/{c.ties}/{c.losses} over {c.n} questions")
    return text + disagreement(c) + family_clause(c)


def disagreement(c: Comparison) -> str:
    """Why a 95% CI that excludes 0 sits beside a Holm p at or above alpha (or one that includes 0 beside a p below
    it): the CI is the bootstrap's for the pair alone, the p a sign-flip test corrected over its family; and with m
    changed questions the exact test cannot go below 2 / 2**m (4 changed questions: 0.125)."""
    excludes = c.diff_low > 0 or c.diff_high < 0
    if excludes == (c.p_holm < c.alpha) or not np.isfinite(c.p_holm):
        return ""
    changed = c.wins + c.losses
    floor = 2.0 ** (1 - changed) if changed else 1.0
    why = [f"the CI is the percentile bootstrap's for this pair alone, the p the paired randomization test "
           f"Holm-corrected over {len(c.family) or 1} comparison{'s' if len(c.family) != 1 else ''}, so they "
           "need not agree"]
    if floor >= c.alpha:
        why.append(f"with {changed} changed question{'s' if changed != 1 else ''} the exact sign-flip test cannot "
                   f"go below p = {floor:.3g}, whatever the sizes of the changes, while the bootstrap's interval "
                   "narrows on so few values: trust the test")
    return " (" + "; ".join(why) + ")"


def family_clause(c: Comparison) -> str:
    """The Holm family of a comparison, and the largest family in which its raw p would surely stay below alpha
    (Holm's p is at most the family's size times the raw p, and exactly that when the others are larger)."""
    if not c.family or not np.isfinite(c.p_raw):
        return ""
    size = len(c.family)
    listed = ", ".join(markdown_literal(pair) for pair in c.family)
    if c.p_raw >= c.alpha:
        holds = f"its raw p {c.p_raw:.3f} is not below {c.alpha:g} even alone"
    else:
        largest = int(np.ceil(c.alpha / c.p_raw)) - 1
        holds = (f"its raw p is {c.p_raw:.3g}: below {c.alpha:g} in any family of up to {largest:,} comparison"
                 f"{'s' if largest != 1 else ''}, and a larger one (more methods) can lift it above")
    return f"; Holm over {size} comparison{'s' if size != 1 else ''} ({listed}): {holds}"


def page_ref(name: str, links: str | None) -> str:
    """A sibling page named in the text: a link when written to a page whose version folder is `links` ("" on the
    version's own pages, "v1/" on index.html), the file name in code type in the terminal (`links` None)."""
    return f"`{name}.md`" if links is None else f"[{name} page]({links}{name}.html)"


def _needed(needed: float, n: int, links: str | None = None) -> str:
    if not np.isfinite(needed):
        return "more questions would not settle it"
    if needed > PRACTICAL_TIE * n:
        return f"about {int(needed):,} questions would settle it, more than {PRACTICAL_TIE} times the {n} you have: " \
               "treat them as tied"
    return f"about {int(needed):,} questions would settle it (you have {n}; {page_ref('budget', links)})"


def verdict_text(result: Verdict | None, links: str | None = None) -> str:
    """The answer in one paragraph: the best method or the tied group, by how much, how sure."""
    if result is None:
        return "No method was evaluated on this metric."
    label = metric_label(result.metric, result.k)
    head = (f"**{markdown_literal(result.best)}** has the highest {label}, {result.mean:.3f} (95% CI "
            f"{result.ci_low:.3f}–{result.ci_high:.3f})")
    lead = result.lead
    if lead is None:
        return head + "; it is the only method."
    if not result.tied:
        return (f"{head}, clearly ahead of every other method: its lead over the runner-up {markdown_literal(lead.b)} "
                f"is {evidence(lead)}.")
    tied = ", ".join(markdown_literal(m) for m in result.tied)
    return (f"{head}, but it is **not shown better** than {tied} (tier a: not significantly behind it). Its lead "
            f"over the runner-up {markdown_literal(lead.b)}: {evidence(lead)}; "
            f"{_needed(result.needed, lead.n, links)}.")


def _over_budget(method: str, cost: Mapping[str, Mapping[str, float]] | None, budget_ms: float | None) -> str:
    """The clause that withdraws a recommendation whose method's served p95 is over the latency budget ("" when it
    fits, or without a budget or a served p95)."""
    p95 = (cost or {}).get(method, {}).get("p95_ms", np.nan)
    if not budget_ms or not np.isfinite(p95) or p95 <= budget_ms:
        return ""
    return (f" — but not at this budget: served, its p95 is {p95:.1f} ms, over `decision.latency_budget_ms` "
            f"{budget_ms:g} (see the best within it below)")


def budget_lines(choice: BudgetChoice | None, label: str, cost: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The latency budget applied to every method, as a bullet: which are over it, and when the best is, the best
    within it and what choosing it costs in quality (Δ with its CI)."""
    if choice is None:
        return []
    budget = f"`decision.latency_budget_ms` {choice.budget_ms:g}"
    over = ", ".join(f"{markdown_literal(m)} ({cost[m]['p95_ms']:.1f} ms)" for m in choice.over)
    head = (f"**Latency budget** ({budget}, served p95): " + (f"over it: {over}; never recommended here. "
                                                               if choice.over else "every timed method fits. "))
    if choice.unknown:
        head += f"No served p95 for {', '.join(markdown_literal(m) for m in choice.unknown)}: not judged. "
    best = markdown_literal(choice.best)
    if choice.best_within is None:
        return [f"- {head}→ No method with a served p95 fits the budget: raise it, or make a method cheaper."]
    if choice.best_within == choice.best:
        return [f"- {head}→ The best method, {best}, fits it."]
    within = markdown_literal(choice.best_within)
    loss = choice.loss
    cost_in_quality = (f"Δ {loss.diff:+.3f} {label} (95% CI {loss.diff_low:+.3f} to {loss.diff_high:+.3f}, its pair's "
                       f"randomization p = {loss.p_holm:.3f}, W/T/L {loss.wins}/{loss.ties}/{loss.losses})"
                       if loss is not None else "a difference these pairs do not hold")
    return [f"- {head}The best, {best}, is over it. → The best within it is **{within}** "
            f"(p95 {cost[choice.best_within]['p95_ms']:.1f} ms): against {best}, {cost_in_quality}."]


def _rule_line(item: Advice, label: str, cost: Mapping[str, Mapping[str, float]] | None, links: str,
               budget_ms: float | None = None) -> str:
    """One rule as a bullet: the pattern with its evidence, then the suggested action (sibling pages linked from the
    version folder `links`); with served latencies (`cost`) and a budget, a recommendation of a method over it is
    withdrawn."""
    names = [markdown_literal(m) for m in item.methods]
    if item.rule == "low_scores":
        return (f"**Every method scores low** (the best, {names[0]}, reaches {label} {item.figures['best']:.3f}, below "
                f"`decision.low_score` {item.figures['low_score']:g}). → Check the data and the labels first "
                f"(the label findings below, the unjudged share on the {page_ref('robustness', links)}) before "
                "choosing a method.")
    c = item.evidence[0]  # every rule but low_scores rests on one comparison
    if item.rule == "hybrid_above_dense":
        return (f"**Hybrid clearly above dense**: {names[0]} over {names[1]}, {evidence(c)}. → Use {names[0]} in "
                "production" + _over_budget(item.methods[0], cost, budget_ms) + ".")
    if item.rule == "dense_close_to_hybrid":
        return (f"**Dense ≈ hybrid**: {names[0]} is shown no worse than {names[1]} by more than "
                f"{item.figures['margin']:g} (one-sided {_p(c.p_noninferior).removeprefix('Holm ')}; "
                f"{evidence(c)}). → The simpler "
                f"one will do: {names[0]} (one index, one query encoding)" + _over_budget(item.methods[0], cost,
                                                                                         budget_ms) + ".")
    if item.rule == "needs_margin":
        return (f"**Dense vs hybrid undecided**: neither {names[0]} nor {names[1]} is clearly above the other "
                f"({evidence(c)}), and without `evaluation.margin` on {label} “the simpler one will do” cannot be "
                "shown. → Set a margin (the loss you would accept for a simpler system) to test it.")
    if item.rule == "lexical_above_dense":
        return (f"**Lexical clearly above dense**: {names[0]} over {names[1]}, {evidence(c)}. → The embeddings do not "
                "fit this domain: fine-tune them on your documents, or keep full-text search (alone or fused).")
    if item.rule == "reranker_gains":
        budget = item.figures.get("latency_budget_ms", np.nan)
        timing = (cost or {}).get(item.methods[0]) or {}
        served = bool(np.isfinite(timing.get("p95_ms", np.nan)))
        latency = (f"; served, it takes {timing['p50_ms']:.1f} ms p50, {timing['p95_ms']:.1f} ms p95 a question"
                   if served else f"; its served latency: {page_ref('cost', links)}")
        if np.isfinite(budget) and served:
            fits = timing["p95_ms"] <= budget
            latency += f" — {'within' if fits else 'over'} `decision.latency_budget_ms` {budget:g}"
            action = "Turn it on." if fits else "Not recommended at this budget: its p95 is over it."
        else:
            action = "Turn it on if its served p95 fits your latency budget."
            latency += f" (`decision.latency_budget_ms` {budget:g})" if np.isfinite(budget) else ""
        return (f"**The reranker gains a lot**: {names[0]} over its first stage {names[1]}, {evidence(c)} (at least "
                f"`decision.rerank_gain` {item.figures['rerank_gain']:g}){latency}. → {action}")
    needed = item.figures["needed"]
    head = "Tied on every question" if c.wins == c.losses == 0 else "Wide intervals"
    if np.isfinite(needed) and needed <= PRACTICAL_TIE * c.n:
        action = (f"Not enough questions to choose between them: add questions (or choose on cost, "
                  f"{page_ref('cost', links)})")
    else:  # no number of questions, or too many, would settle it: adding some is no advice
        action = f"Treat them as tied: choose on cost ({page_ref('cost', links)})"
    return f"**{head}**: {names[0]} vs {names[1]}, {evidence(c)}; {_needed(needed, c.n, links)}. → {action}."


def grid_base(method: str) -> str:
    """The method a grid point was made from (`bm25+rerank-e5[depth=20]` -> `bm25+rerank-e5`), else the method."""
    point = grid_point(method)
    return method if point is None else point[0]


def grid_groups(rules: Sequence[Advice]) -> list[list[Advice]]:
    """The rules in order, one group each, except that a reranker's gain at several points of one grid over the same
    first stage is one group: which point to keep is one decision (the Recommended configuration's), not a bullet
    each."""
    groups: dict[tuple[Any, ...], list[Advice]] = {}
    for number, item in enumerate(rules):
        key = (("reranker_gains", grid_base(item.methods[0]), *item.methods[1:]) if item.rule == "reranker_gains"
               else (number,))
        groups.setdefault(key, []).append(item)
    return list(groups.values())


def _group_line(group: Sequence[Advice], label: str, cost: Mapping[str, Mapping[str, float]] | None, links: str,
                budget_ms: float | None) -> str:
    """One bullet for a group (grid_groups): the first point's rule in full, the other points' gains in short."""
    line = _rule_line(group[0], label, cost, links, budget_ms)
    if len(group) == 1:
        return line
    pattern, action = line.rsplit(" → ", 1)
    others = "; ".join(f"{markdown_literal(item.methods[0])} Δ {c.diff:+.3f} (95% CI {c.diff_low:+.3f} to "
                       f"{c.diff_high:+.3f}), {_p(c.p_holm)}" for item in group[1:] for c in item.evidence[:1])
    return (f"{pattern.removesuffix('.')}. The grid's other points gain too: {others}. → {action} Which point to "
            "keep: the *Recommended configuration* above (the cheapest shown no worse than the best).")


def decision_lines(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]],
                   alpha: float, types: Mapping[str, str], inputs: Mapping[str, Sequence[str]],
                   settings: Mapping[str, Any], cost: Mapping[str, Mapping[str, float]] | None = None,
                   level: int = 2, abstention: pd.DataFrame | None = None, links: str = "") -> list[str]:
    """"The answer" and "What to do" sections (Markdown lines, headings of `level`) on the first headline metric;
    `abstention` (zone_table's rows) adds the abstention rule of each method with zones; `links` is the version
    folder the sibling pages are linked from ("" on the version's own pages)."""
    return (answer_lines(aggregate, pairs, grain, headline, alpha, level, links)
            + what_to_do_lines(aggregate, pairs, grain, headline, alpha, types, inputs, settings, cost, level,
                               abstention, links))


def answer_lines(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]],
                 alpha: float, level: int = 2, links: str = "") -> list[str]:
    """"The answer" section alone (decision_lines): what the comparison page shows first."""
    metric, k = headline[0]
    answer = verdict(aggregate, pairs, grain, metric, k, alpha)
    return [f"{'#' * level} The answer ({metric_label(metric, k)}, {grain} grain, all questions)", "",
            verdict_text(answer, links), ""]


def what_to_do_lines(aggregate: pd.DataFrame, pairs: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]],
                     alpha: float, types: Mapping[str, str], inputs: Mapping[str, Sequence[str]],
                     settings: Mapping[str, Any], cost: Mapping[str, Mapping[str, float]] | None = None,
                     level: int = 2, abstention: pd.DataFrame | None = None, links: str = "") -> list[str]:
    """"What to do" section alone (decision_lines)."""
    metric, k = headline[0]
    label = metric_label(metric, k)
    lines = [f"{'#' * level} What to do", ""]
    rules = advice(aggregate, pairs, grain, metric, k, alpha, types, inputs, settings)
    budget_ms = settings.get("latency_budget_ms")
    budget = budget_lines(budget_choice(aggregate, pairs, grain, metric, k, alpha,
                                        {m: row["p95_ms"] for m, row in cost.items()}, budget_ms), label, cost
                          ) if cost is not None else []
    lines += [f"- {_group_line(group, label, cost, links, budget_ms)}" for group in grid_groups(rules)
              ] + budget + abstention_rules(abstention) or [
        "- No rule of the decision table applies on these numbers (docs/concepts/report.md, *What to do*)."]
    return lines + [""]


def abstention_rules(zones: pd.DataFrame | None) -> list[str]:
    """Per method with abstention zones, when the version has unanswerable questions: what its abstain zone catches
    and costs, and the action (keep the zones when it catches a larger share than it loses, else move t1 or change
    the signal). The points of one grid (the same zones) are one bullet: the first in full, the others' shares
    in short."""
    lines: dict[str, list[str]] = {}
    for method, group in ([] if zones is None else zones.groupby("method", sort=True)):
        rows = group.set_index("zone")
        abstain = rows.loc["abstain"]
        if not (np.isfinite(abstain["unanswerable_share"]) and np.isfinite(abstain["answerable_share"])):
            continue  # nothing to catch (or to lose): the calibration page says why
        caught, lost = float(abstain["unanswerable_share"]), float(abstain["answerable_share"])
        total_u = int(group["unanswerable"].sum())
        total_a = int(group["answerable"].sum())
        action = ("keep the zones; the calibration page lists each zone's questions and hit@k" if caught > lost
                  else "its top-1 score does not tell them apart at t1: move t1, or take a reranker's score as the "
                  "signal (calibration page)")
        few = [f"{n} {kind} question{'s' if n != 1 else ''}"
               for n, kind in ((total_u, "unanswerable"), (total_a, "answerable")) if n < SMALL_N]
        if few:
            action = (f"only {' and '.join(few)}: too few to rely on these shares (see their intervals); add "
                      f"questions (at least {SMALL_N} of each kind) before acting on it. On these numbers: {action}")
        caught_n, lost_n = int(abstain["unanswerable"]), int(abstain["answerable"])
        shares = (f"catches {caught:.0%} of the unanswerable questions ({caught_n} of {total_u}; 95% CI "
                  f"{share_interval(caught_n, total_u)}) at the cost of {lost:.0%} of the answerable ones ({lost_n} "
                  f"of {total_a}; 95% CI {share_interval(lost_n, total_a)})")
        siblings = lines.setdefault(grid_base(str(method)), [])
        if not siblings:
            siblings += [f"- **Abstention ({markdown_literal(str(method))})**: abstaining below t1 = "
                         f"{abstain['high']:.4g} {shares}", f"{action[0].upper()}{action[1:]}."]
        else:
            siblings.insert(-1, f"{markdown_literal(str(method))} below t1 = {abstain['high']:.4g} {shares}")
    return [parts[0] + (f". The grid's other points: {'; '.join(parts[1:-1])}" if len(parts) > 2 else "")
            + f". → {parts[-1]}" for parts in lines.values()]


# Fewer questions of a kind than this, and the advice resting on them says it is too few to rely on: a share of 20
# questions has a 95% interval about ±0.2 wide.
SMALL_N = 20


def share_interval(count: int, n: int) -> str:
    """The exact (Clopper-Pearson) 95% interval of a share of count out of n questions, as "a%–b%"."""
    low, high = share_bounds(count, n)
    return f"{low:.0%}–{high:.0%}"
