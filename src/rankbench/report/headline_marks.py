"""The headline table's marks with their evidence: each mark numbered, its footnote (Markdown) and tooltip (HTML)
giving the comparison, the Holm-adjusted p, W/T/L and the family Holm corrects over. The family is `report.comparisons`:
`baseline` (every method against the baseline, as the other tables) or named planned comparisons."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.evaluation.marks import BETTER, NEAR, WORSE, cell
from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.evaluation.stats import holm
from rankbench.report.tables import method_grid, pair_row

FAMILY_COLUMNS = ["method", "versus", "metric", "k", "diff", "p_raw", "p_holm", "wins", "ties", "losses", "family",
                  "mark"]


def comparison_family(table: pd.DataFrame, pairs: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]],
                      comparisons: str | Sequence[Sequence[str]], alpha: float) -> pd.DataFrame:
    """One row per comparison of the family at each headline metric (FAMILY_COLUMNS; all questions, at the grain):
    the baseline's (Holm over the methods compared with it, the aggregate's p_holm) or the planned pairs' (Holm over
    the planned pairs that were compared, from pairs.parquet's raw randomization p; diff and W/T/L of the first)."""
    rows: list[dict[str, Any]] = []
    view = table[(table["grain"] == grain) & (table["kind"] == ALL_KINDS)]
    for metric, k in headline:
        if comparisons == "baseline":
            found = view[(view["metric"] == metric) & (view["k"] == k) & view["baseline"].notna()
                         & (view["method"] != view["baseline"]) & view["p_holm"].notna()]
            rows += [{"method": r.method, "versus": r.baseline, "metric": metric, "k": k, "diff": r.diff,
                      "p_raw": r.p_randomization, "p_holm": r.p_holm, "wins": r.wins, "ties": r.ties,
                      "losses": r.losses, "family": len(found)} for r in found.itertuples()]
            continue
        compared = [(a, b, row) for a, b in comparisons
                    if (row := pair_row(pairs, grain, ALL_KINDS, metric, k, a, b)) is not None]
        adjusted = holm([row["p_randomization"] for _, _, row in compared])
        rows += [{"method": a, "versus": b, "metric": metric, "k": k, "diff": row["diff"],
                  "p_raw": row["p_randomization"], "p_holm": p, "wins": row["wins"], "ties": row["ties"],
                  "losses": row["losses"], "family": len(compared)} for (a, b, row), p in zip(compared, adjusted)]
    family = pd.DataFrame(rows, columns=FAMILY_COLUMNS[:-1])
    significant = family["p_holm"] < alpha
    family["mark"] = [(BETTER if diff > 0 else WORSE if diff < 0 else "") if flag else ""
                      for diff, flag in zip(family["diff"], significant)]
    return family[FAMILY_COLUMNS]


def headline_grid(table: pd.DataFrame, family: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]],
                  ci: bool, methods: Sequence[str], every: bool) -> tuple[pd.DataFrame, dict[int, str]]:
    """The headline table (methods × metric) with each mark numbered, `↑[1]`, and the footnotes by number; every:
    number the unmarked comparisons too (`[2]`, a planned family), else only the marks. The within-one-question
    mark `°` stays the baseline's."""
    rows = table[(table["grain"] == grain) & (table["kind"] == ALL_KINDS)].set_index(["method", "metric", "k"])
    noted = family if every else family[family["mark"] != ""]
    by_cell: dict[tuple[str, str, int], list[Any]] = {}
    for row in noted.itertuples():
        by_cell.setdefault((row.method, row.metric, row.k), []).append(row)
    notes: dict[int, str] = {}

    def text(row: pd.Series) -> str:
        plain = row.copy()
        plain["significant"], plain["near"] = "", False
        marks = ""
        for note in by_cell.get(row.name, []):
            notes[len(notes) + 1] = footnote(note)
            marks += f"{note.mark}[{len(notes)}]"
        return cell(plain, ci) + marks + (NEAR if row["near"] else "")

    return method_grid(rows, headline, methods, text), notes


def footnote(note: Any) -> str:
    """One comparison in words: who against whom, the difference, the Holm-adjusted and raw p, W/T/L, the family."""
    label = metric_label(note.metric, note.k)
    return (f"{note.method} vs {note.versus}, {label}: {note.diff:+.3f}; Holm-adjusted p = {note.p_holm:.3g} "
            f"(raw {note.p_raw:.3g}); W/T/L {note.wins}/{note.ties}/{note.losses} questions; family of "
            f"{note.family} comparison{'s' if note.family != 1 else ''} at {label}")


def family_legend(comparisons: str | Sequence[Sequence[str]], alpha: float, baseline: str | None) -> str:
    """What the headline's marks compare, in one sentence (none without a family: no baseline to compare with)."""
    if comparisons == "baseline" and baseline is None:
        return ""
    if comparisons == "baseline":
        return (f"Headline marks [n]: against the baseline, Holm-corrected over every method compared with it at "
                f"that metric (p < {alpha:g}); each footnote gives the adjusted p, W/T/L and the family size. An "
                "unmarked cell was not significant after Holm; its adjusted p is in `comparison.csv` (`p_holm`).")
    pairs = "; ".join(f"{a} vs {b}" for a, b in comparisons)
    return (f"Headline marks [n]: the planned comparisons of `report.comparisons` ({pairs}), Holm-corrected over "
            f"those compared at each metric (p < {alpha:g}); the mark is on the first method of a pair, and every "
            "planned comparison has its footnote, marked or not. "
            + (f"The full tables below mark against the baseline `{baseline}` (↑ / ↓ Holm-corrected over the methods, "
               f"{NEAR}, here too: within one question's worth of it)." if baseline else
               "The full tables below have no marks (no baseline is configured)."))


def footnote_lines(notes: Mapping[int, str]) -> list[str]:
    """The footnotes under the headline table, by number."""
    return [f"- [{number}] {text}" for number, text in sorted(notes.items())] + ([""] if notes else [])


def with_tooltips(document: str, grid: pd.DataFrame, notes: Mapping[int, str]) -> str:
    """An HTML page whose headline marks `↑[n]` (or `[n]`) carry their footnote as a tooltip (title): the first
    occurrence of each marker is its cell, as the table comes before its footnotes (`[n]` is never part of a
    method name: grid points are named `[key=value]`)."""
    cells = " ".join(str(value) for value in grid.to_numpy().ravel())
    for number, text in notes.items():
        marker = next(f"{mark}[{number}]" for mark in (BETTER, WORSE, "") if f"{mark}[{number}]" in cells)
        document = document.replace(marker, f'<span title="{html.escape(text, quote=True)}">{marker}</span>', 1)
    return document
