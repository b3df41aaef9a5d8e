"""Recorded runs as text: the list `rankbench runs` prints, the run-to-run diff (`rankbench diff-runs` and the
comparison page's "Since the last run" section, one function for both), and the gate's paragraph."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.analysis.run_diff import AbstentionVerdict, GateVerdict, RunDiff, by_size
from rankbench.analysis.run_store import QUESTION_CHANGES, StoredRun, question_changes
from rankbench.evaluation.metric_names import metric_label
from rankbench.io.markdown import markdown_grid

# Beside a run or version made from a draft question-set version, where the pages' DRAFT banner does not fit (here,
# not in report/pages.py: `rankbench runs` stays in the light core, without markdown-it).
DRAFT_MARK = "(draft)"
QUESTIONS_SHOWN = 10  # per method and direction; the rest are counted
_TEXT_CHARS = 80


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _change(change: Mapping[str, Any]) -> str:
    """`key` before → after; a block added or removed (a method, a grid point) as `key` added / removed."""
    if change["before"] is None and isinstance(change["after"], Mapping):
        return f"`{change['key']}` added"
    if change["after"] is None and isinstance(change["before"], Mapping):
        return f"`{change['key']}` removed"
    return f"`{change['key']}` {_value(change['before'])} → {_value(change['after'])}"


def change_text(changes: Sequence[Mapping[str, Any]], limit: int = 6) -> str:
    """Config changes in one line: `key` before → after (or added, removed), the first few, then how many more."""
    if not changes:
        return "no config change"
    shown = [_change(change) for change in changes[:limit]]
    more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
    return "; ".join(shown) + more


QUESTION_CHANGE_NAMES = {"text": "text changed", "labels": "labels changed",
                         "fields": "kind, audience or as_of changed", "added": "added", "removed": "removed"}


def question_change_text(changes: Mapping[str, Sequence[str]] | None, limit: int = 6) -> str:
    """Question-set changes in one line: per kind of change (text, labels, ...), the qids (the first few, then how many
    more)."""
    if changes is None:
        return ("question set changed (its sha256 differs; the earlier run's record, older than rankbench's "
                "per-question fingerprints, cannot name the questions)")
    parts = []
    for name in QUESTION_CHANGES:
        qids = list(changes.get(name, []))
        if qids:
            more = f" and {len(qids) - limit} more" if len(qids) > limit else ""
            parts.append(f"{QUESTION_CHANGE_NAMES[name]} {', '.join(f'`{q}`' for q in qids[:limit])}{more}")
    return "; ".join(parts) if parts else "no question change"


def previous_of(run: StoredRun, runs: Sequence[StoredRun]) -> StoredRun | None:
    """The run stored before this one (its `previous_run`), when it is among these."""
    return next((other for other in runs if other.run_id == run.meta.get("previous_run")), None)


def run_change_text(run: StoredRun, previous: StoredRun | None, limit: int = 3) -> str:
    """What changed in a stored run against the run stored before it: its config keys and questions ("first run"
    when there was none); the question change is said only when there is one."""
    if not run.meta.get("previous_run"):
        return "first run"
    text = change_text(run.meta.get("config_changes", []), limit)
    if previous is not None:
        changes = question_changes(previous.meta, run.meta)
        if changes is None:
            text += "; " + question_change_text(changes, limit)
        elif any(changes.values()):
            text += "; questions: " + question_change_text(changes, limit)
    return text


def draft_runs_line(drafts: Sequence[str]) -> str:
    """The sentence naming the runs made from a draft question-set version ('' when none was)."""
    if not drafts:
        return ""
    names = " and ".join(f"`{run}`" for run in drafts)
    return (f"Run{'s' if len(drafts) > 1 else ''} {names} {'were' if len(drafts) > 1 else 'was'} made from a draft "
            "question-set version (not frozen): its questions and labels may still change, and so may its numbers.")


def runs_table(runs: Sequence[StoredRun], headline: Sequence[tuple[str, int]], means: Mapping[str, pd.Series]) -> str:
    """One row per run: id (marked when made from a draft version), date, label, note, what changed in the config
    and the questions, each method's first headline mean."""
    metric, k = headline[0]
    rows = []
    for run in runs:
        values = means.get(run.run_id, pd.Series(dtype=float))
        rows.append({"run": f"{run.run_id} {DRAFT_MARK}" if run.meta.get("draft") else run.run_id,
                     "date": run.meta["date"], "label": run.meta.get("label") or "",
                     "note": run.meta.get("note") or "",
                     "what changed": run_change_text(run, previous_of(run, runs)),
                     f"{metric_label(metric, k)} by method": ", ".join(f"{m} {v:.3f}" for m, v in values.items())})
    frame = pd.DataFrame(rows).set_index("run")
    return markdown_grid(frame)


def _shorten(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= _TEXT_CHARS else flat[:_TEXT_CHARS - 1].rstrip() + "…"


def _question_lines(moved: pd.DataFrame, texts: Mapping[str, str], worse: bool) -> list[str]:
    rows = moved[moved["delta"] < 0] if worse else moved[moved["delta"] > 0]
    rows = by_size(rows, worst_first=worse)
    lines = [f"  - `{r.qid}` {_shorten(texts.get(r.qid, ''))} — {r.before:.3f} → {r.after:.3f}"
             for r in rows.head(QUESTIONS_SHOWN).itertuples()]
    if len(rows) > QUESTIONS_SHOWN:
        lines.append(f"  - … and {len(rows) - QUESTIONS_SHOWN} more")
    return lines


def diff_markdown(diff: RunDiff, headline: Sequence[tuple[str, int]], texts: Mapping[str, str], heading: str,
                  level: int = 2) -> str:
    """The diff of two runs as Markdown: config keys changed, methods added or removed, one row per method with the
    Δ (p) of each headline metric and W/T/L on the first, then the questions that got worse or better on it."""
    hashes = "#" * level
    lines = [f"{hashes} {heading}", "", f"Run `{diff.before}` → run `{diff.after}`. Config: "
             f"{change_text(diff.config_changes)}. Questions: {question_change_text(diff.questions_changed)}."
             + (f" {draft_runs_line(diff.drafts)}" if diff.drafts else "")]
    if diff.added or diff.removed:
        lines.append(f"Methods added: {', '.join(diff.added) or 'none'}; removed: {', '.join(diff.removed) or 'none'}.")
    keys = {(m, int(k)) for m, k in headline}
    table = diff.methods[[(m, int(k)) in keys for m, k in zip(diff.methods["metric"], diff.methods["k"])]]
    if table.empty:
        lines += ["", "No method is in both runs."]
        return "\n".join(lines) + "\n"
    metric, k = headline[0]
    lines += ["", "Δ = after − before on the questions both runs evaluate (n), with the paired randomization test's "
              f"p; W/T/L on {metric_label(metric, int(k))}: questions where the later run wins, ties, loses. Inputs: "
              "whether the method's settings, chunker, encoders or input methods changed, or else the questions "
              "(text, labels, added or removed).", ""]
    grid = pd.DataFrame(index=pd.Index(sorted(set(table["method"])), name="method"))
    by_method = table.set_index(["method", "metric", "k"])
    first = by_method.xs((metric, int(k)), level=["metric", "k"])
    asked = "same" if diff.questions_changed is not None and not any(diff.questions_changed.values()) \
        else "questions changed"
    grid["inputs"] = first["inputs_changed"].map({True: "changed", False: asked})
    grid["n"] = first["n"].astype(str)
    for name, cut in headline:
        rows = by_method.xs((name, int(cut)), level=["metric", "k"])
        grid[f"{metric_label(name, int(cut))} Δ (p)"] = (rows["delta"].map("{:+.3f}".format) + " ("
                                                          + rows["p"].map("{:.3f}".format) + ")")
    grid["W/T/L"] = (first["wins"].astype(str) + "/" + first["ties"].astype(str) + "/"
                     + first["losses"].astype(str))
    lines.append(markdown_grid(grid))
    moved = diff.questions[(diff.questions["metric"] == metric) & (diff.questions["k"] == int(k))]
    for method, group in moved.groupby("method", sort=True):
        lines += ["", f"**{method}**, {metric_label(metric, int(k))} by question:"]
        for worse, name in ((True, "worse"), (False, "better")):
            found = _question_lines(group, texts, worse)
            if found:
                lines += [f"- {name}:", *found]
    if moved.empty:
        lines += ["", f"No question changed on {metric_label(metric, int(k))}."]
    return "\n".join(lines) + "\n"


def since_last_run_section(diff: RunDiff | None, headline: Sequence[tuple[str, int]], texts: Mapping[str, str]) -> str:
    """The comparison page's "Since the last run" section (the same text as `rankbench diff-runs`)."""
    if diff is None:
        return "## Since the last run\n\nThis is the first recorded run of this version: nothing to compare.\n"
    return diff_markdown(diff, headline, texts, "Since the last run")


def _needed(needed: float, n: int) -> str:
    """About how many questions like these would decide, or why more would not."""
    if needed != needed:  # NaN
        return "more questions like these would not decide it"
    if needed == float("inf"):
        return "no number of questions like these would decide it at this alpha"
    return f"about {int(needed)} questions like these would decide it (you have {n})"


def gate_paragraph(verdict: GateVerdict, diff: RunDiff, method: str, metric: str, k: int, max_drop: float,
                   alpha: float, texts: Mapping[str, str], margin: float | None = None) -> str:
    """One paragraph: PASS, FAIL or INCONCLUSIVE, the means, the drop against the tolerance or the margin, the p
    against alpha, the questions needed when the data cannot tell, the worst questions, and which of the two runs was
    made from a draft version (it does not change the verdict)."""
    name = metric_label(metric, k)
    drafts = f" {draft_runs_line(diff.drafts)}" if diff.drafts else ""  # said, never a reason to fail
    if verdict.reason == "no shared question":
        return (f"FAIL: {method} answered no question in both runs {diff.before} and {diff.after}, so nothing can be "
                f"compared; compare runs of the same question-set version.{drafts}")
    if verdict.row is None:
        where = f"run {diff.before}" if method in diff.added else f"run {diff.after}"
        return (f"FAIL: {method} has no {name} in {where} (runs {diff.before} → {diff.after}), so nothing can be "
                f"compared; the gate fails when the method's run is missing.{drafts}")
    row = verdict.row
    stats = (f"{method} {name} {row['before']:.4f} → {row['after']:.4f} (Δ {row['delta']:+.4f}) over "
             f"{row['n']} shared questions, paired randomization p = {row['p']:.4f}, W/T/L {row['wins']}/"
             f"{row['ties']}/{row['losses']}, run {diff.before} → {diff.after}")
    margin = max_drop if margin is None else margin
    within = f"one-sided p = {verdict.p_margin:.4f} that the loss is within"
    needed = _needed(verdict.needed, int(row["n"]))
    heads = {
        "non-inferior": f"PASS: {stats}: shown no worse than before by more than the margin {margin:g} "
                        f"({within} it, < {alpha:g}).",
        "worse": f"FAIL: {stats}: the drop is significant (p < {alpha:g}) and not shown within the margin "
                 f"{margin:g} ({within} it).",
        "inconclusive": f"INCONCLUSIVE: {stats}: neither shown worse (p ≥ {alpha:g}) nor shown within the margin "
                        f"{margin:g} ({within} it); {needed}.",
        "regression": f"FAIL: {stats}: the drop exceeds the tolerance {max_drop:g} and is significant "
                      f"(p < {alpha:g}).",
        "not significant": f"PASS: {stats}: the drop exceeds the tolerance {max_drop:g} but is not significant "
                           f"(p ≥ {alpha:g}), so it may be noise.",
        "too few changed": f"INCONCLUSIVE: {stats}: the drop exceeds the tolerance {max_drop:g}, but with "
                           f"{row['wins'] + row['losses']} changed questions the test cannot reach p < {alpha:g} "
                           f"whatever the changes; {needed}.",
        "only losses": f"INCONCLUSIVE: {stats}: every changed question lost and the loss is not shown within the "
                       f"tolerance {max_drop:g} ({within} it); {needed}.",
        "unchanged": f"PASS: {stats}: no question changed.",
        "within tolerance": f"PASS: {stats}: no drop beyond the tolerance {max_drop:g}.",
    }
    head = heads[verdict.reason]
    if verdict.worst.empty:
        return head + " No question regressed." + drafts
    worst = "; ".join(f"{r.qid} ({_shorten(texts.get(r.qid, ''))}) {r.before:.3f} → {r.after:.3f}"
                      if texts.get(r.qid) else f"{r.qid} {r.before:.3f} → {r.after:.3f}"
                      for r in verdict.worst.itertuples())
    return f"{head} Questions that regressed most: {worst}.{drafts}"


def _worsening(worse: float) -> str:
    """How much an abstention direction got worse, in share points, as words: "worse by 5.0 points", "better by 50.0
    points" (a signed "worse by −50.0%" read as a loss), or "no change" when it rounds to 0.0 (never "−0.0")."""
    points = round(abs(worse) * 100, 1)
    if points == 0:
        return "no change"
    return f"{'worse' if worse > 0 else 'better'} by {points:.1f} percentage points"


def abstention_paragraph(verdict: AbstentionVerdict, diff: RunDiff, method: str, lost_margin: float,
                         caught_margin: float, alpha: float) -> str:
    """The abstention gate's answer: PASS, FAIL or INCONCLUSIVE, then one line per direction (shares before → after,
    how much it got worse against its margin, the two p values, the questions needed when the data cannot tell)."""
    margins = {"answerable lost": lost_margin, "unanswerable caught": caught_margin}
    lines = [f"{verdict.outcome.upper()}: abstention zones of {method}, run {diff.before} → {diff.after} (alpha "
             f"{alpha:g}).{' ' + draft_runs_line(diff.drafts) if diff.drafts else ''}"]
    for check in verdict.checks:
        margin = margins[check.direction]
        if check.reason == "no question":
            kind = check.direction.split()[0]
            lines.append(f"- {check.direction}: INCONCLUSIVE: the runs share no {kind} question, so this direction "
                         "cannot be told.")
            continue
        stats = (f"{check.before:.1%} → {check.after:.1%} of {check.n} questions in the abstain zone "
                 f"({_worsening(check.worse)}, margin {margin:g}), randomization p = {check.p:.4f}")
        within = f"one-sided p = {check.p_margin:.4f} that it got no worse than the margin"
        says = {"unchanged": "no question changed zone",
                "within margin": f"shown no worse than the margin ({within})",
                "worse": f"worse beyond the margin and significant ({within})",
                "inconclusive": f"neither shown worse beyond the margin nor within it ({within}); "
                                f"{_needed(check.needed, check.n)}"}
        lines.append(f"- {check.direction}: {check.outcome.upper()}: {stats}: {says[check.reason]}.")
    return "\n".join(lines)


def with_section(page: str, section: str) -> str:
    """A Markdown page with one more section at its end (the comparison page's hook for "Since the last run")."""
    return f"{page.rstrip()}\n\n{section.rstrip()}\n"
