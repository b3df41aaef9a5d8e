"""The per-question explorer: one self-contained HTML page per question-set version (data embedded as compact JSON,
vanilla JS, no server) to see what each method returned for each question and why it wins or loses."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from rankbench.analysis.failures import RANKING, RECALL, candidate_depth, first_relevant
from rankbench.analysis.leaks import leak_flags
from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.io.ids import ids_in
from rankbench.report.tables import TABLE_METRICS, marked, wide
from rankbench.retrieval.registry import method_inputs

# Size budgets: past them the page degrades (fewer results per method, only the headline metrics, shorter
# snippets) rather than growing without bound; the page says what was cut.
ENTRY_BUDGET = 400_000  # results shown: questions × methods × k
VALUE_BUDGET = 1_000_000  # per-question metric values: questions × methods × metrics
SNIPPET_BUDGET = 4_000_000  # characters of passage snippets
SNIPPET_CHARS, MIN_SNIPPET_CHARS, MIN_K = 240, 60, 3
# Per-question bits of a method: failures (failures.parquet) and leaks in its top k.
RANK1, TOPK, RECALL_BIT, RANKING_BIT = 1, 2, 4, 8
STAFF, OUTDATED = 1, 2
# Per-question bits of a method since the last recorded run (since-last-run.parquet).
MOVED_WORSE, MOVED_BETTER = 1, 2
_BOLD = re.compile(r"\*\*(.*?)\*\*")


@dataclass(frozen=True)
class ExplorerSettings:
    """What the explorer shows: the report's grain, cut-offs and headline metrics, how cells are marked, and what
    each method is (cards: method -> {description, models}, configuration.models.method_cards)."""

    dataset: str
    qset: str
    sha256: str
    grain: str
    ks: tuple[int, ...]
    headline: tuple[tuple[str, int], ...]
    relevance_threshold: int
    alpha: float
    ci: bool
    baseline: str | None
    cards: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def shown_k(n_questions: int, n_methods: int, k: int) -> int:
    """Results shown per method and question: k, cut (never below MIN_K) when the page would exceed ENTRY_BUDGET."""
    room = ENTRY_BUDGET // max(1, n_questions * n_methods)
    return max(min(k, MIN_K), min(k, room))


def metric_columns(settings: ExplorerSettings, n_questions: int, n_methods: int) -> list[tuple[str, int]]:
    """Metrics whose per-question values the page carries: the headline, then the comparison table's columns
    (those cut first when the page would exceed VALUE_BUDGET)."""
    full = [(metric, k) for metric in TABLE_METRICS for k in settings.ks]
    columns = list(settings.headline) + [item for item in full if item not in settings.headline]
    room = VALUE_BUDGET // max(1, n_questions * n_methods)
    return columns[:max(len(settings.headline), room)]


def _snippet(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def _fragment(text: str) -> str:
    """A term of a URL text fragment (`#:~:text=`): percent-encoded, with '-', ',' and '&' escaped too."""
    return quote(text, safe="").replace("-", "%2D")


def cell_links(aggregate: pd.DataFrame, settings: ExplorerSettings, methods: Sequence[str],
               columns: Sequence[tuple[str, int]]) -> dict[str, list[tuple[str, str] | None]]:
    """Per method and metric, its cell of the comparison page (text as shown, marks included) and a link to it: a
    text fragment naming the cell with its neighbours in the row of the full table at the report grain (the
    headline table for a headline metric it lacks), so the browser scrolls to that cell."""
    table = marked(aggregate, settings.alpha)
    full = [(metric, k) for metric in TABLE_METRICS for k in settings.ks]
    grids = [(layout, wide(table, settings.grain, ALL_KINDS, layout, settings.ci, methods))
             for layout in (full, list(settings.headline))]
    links: dict[str, list[tuple[str, str] | None]] = {}
    for method in methods:
        links[method] = []
        for item in columns:
            layout, grid = next(((layout, grid) for layout, grid in grids if item in layout), (None, None))
            cells = [method] + [_BOLD.sub(r"\1", text) for text in grid.loc[method]] if grid is not None else []
            at = layout.index(item) + 1 if layout is not None else 0
            if not cells or cells[at] == "–":
                links[method].append(None)
                continue
            terms = [_fragment(cells[at - 1]) + "-", _fragment(cells[at])]
            if at + 1 < len(cells):
                terms.append("-" + _fragment(cells[at + 1]))
            links[method].append((cells[at], "comparison.html#:~:text=" + ",".join(terms)))
    return links


def _codes(values: pd.Series, questions: pd.Index, distinct: np.ndarray) -> list[int]:
    """Per question, the index of its value in `distinct` (-1 where the method has no value)."""
    aligned = values.reindex(questions)
    codes = np.searchsorted(distinct, aligned.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.where(aligned.isna().to_numpy(), -1, codes).astype(int).tolist()


def _score(value: float) -> float:
    return float(f"{value:.4g}")


def _method_values(frame: pd.DataFrame, grain: str) -> dict[tuple[str, int], pd.Series]:
    """A method's per-question values at the grain, per (metric, k), indexed by qid."""
    frame = frame[frame["grain"] == grain]
    return {(metric, int(cut)): group.set_index("qid")["value"]
            for (metric, cut), group in frame.groupby(["metric", "k"], sort=True)}


def _failure_bits(failures: pd.DataFrame, method: str, qids: pd.Index) -> pd.Series:
    """Per question, the method's failures (RANK1, TOPK) and their class (RECALL_BIT, RANKING_BIT) as bits."""
    rows = failures[failures["method"] == method]
    bits = np.where(rows["failure"] == "rank 1", RANK1, TOPK) | np.select(
        [rows["class"] == RECALL, rows["class"] == RANKING], [RECALL_BIT, RANKING_BIT], 0)
    flags = pd.DataFrame({bit: (bits & bit) > 0 for bit in (RANK1, TOPK, RECALL_BIT, RANKING_BIT)},
                         index=rows["qid"].to_numpy())
    per_question = flags.groupby(level=0).any().mul(list(flags.columns)).sum(axis=1)
    return per_question.reindex(qids, fill_value=0).astype(int)


def _moved_bits(changed: pd.DataFrame | None, method: str, metric: tuple[str, int], qids: pd.Index) -> list[int]:
    """Per question, MOVED_WORSE / MOVED_BETTER when the method's first headline metric moved since the last run."""
    if changed is None or changed.empty:
        return [0] * len(qids)
    rows = changed[(changed["method"] == method) & (changed["metric"] == metric[0]) & (changed["k"] == metric[1])]
    bits = np.where(rows["delta"] < 0, MOVED_WORSE, MOVED_BETTER)
    return pd.Series(bits, index=rows["qid"]).reindex(qids, fill_value=0).astype(int).tolist()


def _ranks(values: pd.Series) -> list[int | None]:
    return [None if pd.isna(r) else int(r) for r in values]


def explorer_payload(questions: pd.DataFrame, labels: pd.DataFrame, chunks: Mapping[str, pd.DataFrame],
                     runs: Mapping[str, pd.DataFrame], metrics: Mapping[str, pd.DataFrame],
                     qrels: Mapping[str, pd.DataFrame], failures: pd.DataFrame, aggregate: pd.DataFrame,
                     specs: Mapping[str, Mapping[str, Any]], chunker_of: Mapping[str, str],
                     settings: ExplorerSettings, changed: pd.DataFrame | None = None) -> dict[str, Any]:
    """Everything the page shows, as plain lists (deterministic: same inputs, same payload).

    chunks and qrels are keyed by chunker, the other mappings by method; qrels, metrics and failures are the
    workflow's own files, so the page counts exactly what the comparison page counts. changed: the questions that
    moved since the last recorded run (since-last-run.parquet), for the "Since the last run" filter."""
    methods = sorted(runs)
    qids = pd.Index(questions["qid"], name="qid")
    k_full = max(settings.ks)
    k = shown_k(len(qids), len(methods), k_full)
    columns = metric_columns(settings, len(qids), len(methods))
    threshold, grain = settings.relevance_threshold, settings.grain
    kinds = sorted(questions["kind"].unique())
    ordered = labels.assign(section=labels["section"].fillna("")).sort_values(
        ["qid", "grade", "doc_id", "section"], ascending=[True, False, True, True])
    label_lists: dict[str, list[list[Any]]] = {}
    for qid, doc, section, grade in zip(ordered["qid"], ordered["doc_id"], ordered["section"], ordered["grade"]):
        label_lists.setdefault(qid, []).append([doc, section, int(grade)])
    answerable = set(labels.loc[labels["grade"] >= threshold, "qid"])
    values = {method: _method_values(metrics[method], grain) for method in methods}
    distinct = {item: np.unique(np.concatenate([[]] + [values[m][item].to_numpy(dtype=np.float64)
                                                       for m in methods if item in values[m]]))
                for item in columns}

    chunk_keys: dict[tuple[str, str], int] = {}
    tops: dict[str, pd.DataFrame] = {}
    for method in methods:
        run = runs[method].sort_values(["qid", "rank"], kind="stable")
        top = run[run["rank"] <= k_full]
        flags = leak_flags(top, questions, chunks[chunker_of[method]]).set_index(["qid", "rank"])
        tops[method] = top.join(flags[["staff", "outdated"]], on=["qid", "rank"]).fillna(
            {"staff": False, "outdated": False})
        for chunk_id in tops[method].loc[tops[method]["rank"] <= k, "chunk_id"]:
            chunk_keys.setdefault((chunker_of[method], chunk_id), len(chunk_keys))
    snippet_chars = max(MIN_SNIPPET_CHARS, min(SNIPPET_CHARS, SNIPPET_BUDGET // max(1, len(chunk_keys))))
    keys = pd.DataFrame(list(chunk_keys), columns=["chunker", "chunk_id"], dtype=object)
    keys = keys.assign(doc=keys["chunk_id"], section="", snippet="").astype(object)
    for chunker, group in keys.groupby("chunker", sort=False):
        frame = chunks[chunker]
        info = frame[ids_in(frame["chunk_id"], group["chunk_id"])].drop_duplicates("chunk_id").set_index(
            "chunk_id").reindex(group["chunk_id"])
        known = info["doc_id"].notna().to_numpy()  # an external run's ids are documents: no passage to show
        rows = group.index[known]
        keys.loc[rows, "doc"] = info["doc_id"].to_numpy(dtype=object)[known]
        keys.loc[rows, "section"] = [" / ".join(map(str, s)) for s in info["sections"].to_numpy()[known]]
        keys.loc[rows, "snippet"] = [_snippet(t, snippet_chars) for t in info["text"].to_numpy()[known]]
    chunk_table = {"id": keys["chunk_id"].tolist(), "doc": keys["doc"].tolist(),
                   "section": keys["section"].tolist(), "snippet": keys["snippet"].tolist()}
    shown_docs = set(chunk_table["doc"]) | set(labels["doc_id"])  # only these titles: the corpus may be huge
    titles: dict[str, str] = {}
    for frame in chunks.values():
        shown = frame[ids_in(frame["doc_id"], shown_docs)]
        titles.update(zip(shown["doc_id"], shown["title"]))
    links = cell_links(aggregate, settings, methods, columns)
    method_payloads = []
    for method in methods:
        spec, chunker, run, top = specs[method], chunker_of[method], runs[method], tops[method]
        judged = qrels[chunker]
        relevant = judged[(judged["grain"] == grain) & (judged["grade"] >= threshold)][["qid", "item_id"]]
        ids = run["chunk_id" if grain == "chunk" else "doc_id"]
        hits = pd.MultiIndex.from_arrays([run["qid"], ids]).isin(pd.MultiIndex.from_frame(relevant))
        in_view = top[top["rank"] <= k]
        chunk_grades = judged[judged["grain"] == "chunk"].set_index(["qid", "item_id"])["grade"]
        grades = chunk_grades.reindex(pd.MultiIndex.from_arrays([in_view["qid"], in_view["chunk_id"]]))
        leaked = top.assign(staff=top["staff"].astype(int) * STAFF, outdated=top["outdated"].astype(int) * OUTDATED)
        leaks = leaked.groupby("qid")[["staff", "outdated"]].max().sum(axis=1).reindex(qids, fill_value=0)
        entry = {
            "name": method, "type": spec["type"], "inputs": method_inputs(spec), "depth": candidate_depth(spec),
            "description": settings.cards.get(method, {}).get("description") or "",
            "models": list(settings.cards.get(method, {}).get("models", [])),
            "n": in_view.groupby("qid").size().reindex(qids, fill_value=0).astype(int).tolist(),
            "c": [chunk_keys[(chunker, c)] for c in in_view["chunk_id"]],
            "s": [_score(s) for s in in_view["score"]],
            "g": grades.fillna(-1).astype(int).tolist(),
            "lk": (in_view["staff"].astype(int) * STAFF + in_view["outdated"].astype(int) * OUTDATED).tolist(),
            "first": _ranks(first_relevant(run, relevant, grain).reindex(qids)),
            "firstChunk": _ranks(run.loc[hits].groupby("qid")["rank"].min().reindex(qids)),
            "fail": _failure_bits(failures, method, qids).tolist(),
            "moved": _moved_bits(changed, method, settings.headline[0], qids),
            "leak": leaks.astype(int).tolist(),
            "v": [_codes(values[method].get(item, pd.Series(dtype=np.float64)), qids, distinct[item])
                  for item in columns],
            "mean": [cell[0] if cell else None for cell in links[method]],
            "cell": [cell[1] if cell else None for cell in links[method]],
        }
        if "first_stage_rank" in in_view:
            entry["fs"] = _ranks(in_view["first_stage_rank"])
        method_payloads.append(entry)

    return {
        "version": 1,
        "dataset": settings.dataset, "qset": settings.qset, "sha256": settings.sha256,
        "grain": grain, "k": k, "kFull": k_full, "threshold": threshold,
        "baseline": settings.baseline, "snippetChars": snippet_chars,
        "metrics": [{"metric": metric, "k": cut, "label": metric_label(metric, cut),
                     "headline": (metric, cut) in settings.headline} for metric, cut in columns],
        "values": [distinct[item].tolist() for item in columns],
        "kinds": kinds,
        "questions": {
            "qid": qids.tolist(),
            "text": questions["question"].tolist(),
            "kind": [kinds.index(kind) for kind in questions["kind"]],
            "audience": questions["audience"].fillna("").tolist() if "audience" in questions else [""] * len(qids),
            "asOf": questions["as_of"].fillna("").tolist() if "as_of" in questions else [""] * len(qids),
            "answerable": [int(qid in answerable) for qid in qids],
            "labels": [label_lists.get(qid, []) for qid in qids],
        },
        "titles": dict(sorted(titles.items())),
        "chunks": chunk_table,
        "methods": method_payloads,
    }


def explorer_html(payload: Mapping[str, Any]) -> str:
    """The page: the template with the payload embedded as JSON ('<' escaped, so no text can close the script)."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    head, tail = files("rankbench.report").joinpath("explorer.html").read_text(encoding="utf-8").split("{{DATA}}")
    title = html.escape(f"{payload['dataset']} {payload['qset']}: per-question explorer")
    return head.replace("{{TITLE}}", title) + data + tail
