"""The breakdowns page of one question-set version (breakdowns.md/.html): every metric per question kind, per tag
and per difficulty, apart from the comparison page, which keeps the answer, the headline and the headline metric
per kind (kind_section). Groups with fewer questions than `report.min_group` are counted, not tabled: a new user's
27 questions gave 40 tables of mostly one-question groups, means that say nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.evaluation.scoring import ALL_KINDS, MAX_GROUPS, breakdown_groups, largest_groups, question_kinds
from rankbench.io.markdown import markdown_literal
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.tables import GROUP_LEGEND, MIN_GROUP, group_tables, small_groups, table_metrics

SMALL_NAMED = 12  # the small groups a line names; the rest are counted
SINGULAR = {"question kinds": "question kind", "tags": "tag", "difficulties": "difficulty"}


def kinds_not_applicable(evaluated: Sequence[str], asked: Mapping[str, int]) -> str:
    """Why the per-kind breakdown is absent, true in every case: the kinds with a metric (`evaluated`: fewer than
    two) against the kinds of every question of the version (`asked`: kind -> questions), where unanswerable
    questions (no relevant label, no metric) count too."""
    others = {kind: n for kind, n in sorted(asked.items()) if kind not in evaluated}
    apart = "; ".join(f"{n} {markdown_literal(kind)} question{'s' if n != 1 else ''}" for kind, n in others.items())
    hint = "a native question set gives its questions a `kind` (answerable, unanswerable, …)."
    if not evaluated:
        return f"Not applicable: no question has a relevant label, so no kind has a metric ({apart or 'no question'})."
    if not others:
        return f"Not applicable: every question is of one kind ({markdown_literal(evaluated[0])}); {hint}"
    return (f"Not applicable: every evaluated question (with a relevant label) is of one kind "
            f"({markdown_literal(evaluated[0])}); the other questions have no relevant label, so no metric is "
            f"computed on them ({apart}).")


def small_line(what: str, rows: pd.DataFrame, grain: str, minimum: int) -> list[str]:
    """The line before a breakdown naming its groups with fewer than `minimum` questions evaluated (their counts),
    which get no column; nothing when there is none."""
    small = small_groups(rows[rows["grain"] == grain], minimum)
    if not small:
        return []
    named = sorted(small, key=lambda group: (-small[group], group))[:SMALL_NAMED]
    listed = ", ".join(f"{markdown_literal(group)} ({small[group]})" for group in named)
    more = f" and {len(small) - len(named):,} more" if len(small) > len(named) else ""
    name, verb = (what, "are") if len(small) != 1 else (SINGULAR[what], "is")
    return [f"{len(small):,} {name} with fewer than {minimum} questions evaluated {verb} counted, not tabled (a mean "
            f"over so few says little; `report.min_group`): {listed}{more}.", ""]


def capped_line(what: str, sizes: Mapping[str, int], kept: str) -> list[str]:
    """The line before a breakdown holding more than MAX_GROUPS groups (group -> questions): how many there are, that
    the largest are shown (scoring.largest_groups), how large the others are and where they are (`kept`); nothing
    when every group is shown."""
    if len(sizes) <= MAX_GROUPS:
        return []
    shown = set(largest_groups(sizes))
    largest_left = max(n for group, n in sizes.items() if group not in shown)
    return [f"{len(sizes):,} {what}: the {MAX_GROUPS} with the most questions are shown (ties by name); the other "
            f"{len(sizes) - MAX_GROUPS:,} hold at most {largest_left} question{'s' if largest_left != 1 else ''} "
            f"each and are left out of these tables ({kept}; a table of so many columns is not read, and every group "
            "costs its own bootstrap).", ""]


def kinds_breakdown(aggregate: pd.DataFrame, grain: str, metrics: Sequence[tuple[str, int]], ci: bool,
                    methods: Sequence[str], alpha: float, questions: pd.DataFrame | None,
                    minimum: int) -> list[str]:
    """The metrics per question kind (a table each), or the line saying why there is no per-kind breakdown."""
    kinds = question_kinds(aggregate)
    if len(kinds) < 2:
        asked = questions["kind"].value_counts().to_dict() if questions is not None else dict.fromkeys(kinds, 1)
        return ["### Per question kind", "", kinds_not_applicable(kinds, asked), ""]
    per_kind = aggregate[aggregate["kind"] != ALL_KINDS]
    sizes = (per_kind["n"] + per_kind["n_excluded"]).groupby(per_kind["kind"]).max()
    return [*capped_line("question kinds", {str(kind): int(n) for kind, n in sizes.items()},
                         "`aggregate.parquet` has every kind"),
            *small_line("question kinds", per_kind, grain, minimum),
            *group_tables(per_kind, grain, metrics, ci, methods, alpha, "Per question kind", minimum)]


def breakdown_sections(aggregate: pd.DataFrame, breakdowns: pd.DataFrame | None, grain: str,
                       metrics: Sequence[tuple[str, int]], ci: bool, methods: Sequence[str], alpha: float,
                       questions: pd.DataFrame | None = None, minimum: int = 1) -> list[str]:
    """Every metric per question kind, per tag and per difficulty (report.tables.group_tables), or a line saying
    why a breakdown is absent (one evaluated kind only, naming the questions of other kinds, e.g. unanswerable ones,
    that have no metric; no tags or difficulty on the questions); groups of fewer than `minimum` questions evaluated
    are counted in a line, not tabled."""
    lines = ["## Breakdowns", "", GROUP_LEGEND.format(grain=grain), ""]
    lines += kinds_breakdown(aggregate, grain, metrics, ci, methods, alpha, questions, minimum)
    every_group = breakdown_groups(questions) if questions is not None else None
    for field, heading in (("tags", "Per tag"), ("difficulty", "Per difficulty")):
        rows = breakdowns[breakdowns["breakdown"] == field] if breakdowns is not None else None
        if rows is None or not len(rows):
            lines += [f"### {heading}", "", f"Not applicable: no question of this version has a `{field}` field "
                      "(BEIR and TREC question sets carry none; a native version may give them, see "
                      "docs/reference/data-formats.md).", ""]
            continue
        what = "tags" if field == "tags" else "difficulties"
        if every_group is not None:
            lines += capped_line(what, every_group.loc[every_group["breakdown"] == field, "group"].astype(str)
                                 .value_counts().to_dict(), "nor computed: `breakdowns.parquet` holds the groups shown")
        lines += small_line(what, rows, grain, minimum)
        lines += group_tables(rows, grain, metrics, ci, methods, alpha, heading, minimum)
    return lines


def kind_section(aggregate: pd.DataFrame, grain: str, headline: tuple[str, int], ci: bool, methods: Sequence[str],
                 alpha: float, questions: pd.DataFrame | None, minimum: int) -> list[str]:
    """The comparison page's per-kind table: the first headline metric per question kind (or why there is none),
    and where every metric per kind, tag and difficulty is (the breakdowns page)."""
    return ["## Per question kind", "", GROUP_LEGEND.format(grain=grain), "",
            *kinds_breakdown(aggregate, grain, [headline], ci, methods, alpha, questions, minimum),
            "Every metric per question kind, per tag and per difficulty: the [breakdowns page](breakdowns.html).", ""]


def breakdowns_markdown(aggregate: pd.DataFrame, breakdowns: pd.DataFrame | None, questions: pd.DataFrame,
                        report: Mapping[str, Any], ks: Sequence[int], dataset: str, qset: str,
                        drafts: Sequence[str] = ()) -> str:
    """The breakdowns page in Markdown: every metric of the comparison page's full tables at the report's grain, per
    question kind, per tag and per difficulty."""
    grain, ci, alpha = str(report["grain"]), bool(report["ci"]), float(report["alpha"])
    full = table_metrics(aggregate, ks, report.get("columns", []))
    at_grain = set(aggregate.loc[aggregate["grain"] == grain, ["metric", "k"]].itertuples(index=False, name=None))
    methods = sorted(aggregate["method"].unique())
    minimum = int(report.get("min_group", MIN_GROUP))
    lines = [f"# {dataset} — question-set version {qset}: breakdowns", "",
             "Every metric per question kind, per tag and per difficulty, beside the "
             "[comparison page](comparison.html) (the answer, the headline and the findings).", "",
             *breakdown_sections(aggregate, breakdowns, grain, [(m, k) for m, k in full if (m, k) in at_grain], ci,
                                 methods, alpha, questions, minimum)]
    return draft_banner(drafts) + "\n".join(lines)


def breakdowns_html(markdown: str, dataset: str, qset: str) -> str:
    """The page as a standalone HTML document."""
    return markdown_html(markdown, f"{dataset} {qset} breakdowns")
