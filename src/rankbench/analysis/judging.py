"""Labelling in the browser (`rankbench judge`), the logic without the server: the pool of a version as passages
shown in their documents, each judgment an event appended to the judge's file (the latest per question and passage
in force), an evidence selection checked exactly as a label's `evidence` is, agreement between people and with the
LLM judge, and the judgments as the filled pool that pool-import's `import_labels` freezes."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.analysis.agreement import confusion, kappa_interval, weighted_kappa
from rankbench.corpus.evidence import evidence_span, quote_of
from rankbench.corpus.sections import Section, split_sections
from rankbench.errors import InputError

GRADES = (0, 1, 2, 3)
PERSON, ACCEPTED = "person", "person accepting the judge"
LLM_JUDGE = "LLM judge"
CONTEXT = 600  # characters of the document shown before and after a passage
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_judge_name(name: str) -> str:
    """A judge's name, which names its judgments file: letters, digits, `.`, `_`, `-` (an InputError otherwise)."""
    if not _NAME.fullmatch(name) or name == LLM_JUDGE:
        raise InputError(None, "--judge", f"{name!r} is not a judge name", "Use letters, digits, '.', '_' or '-' "
                         "(up to 64), e.g. --judge alice.")
    return name


def heading_paths(text: str) -> dict[str, list[str]]:
    """Each section's heading path: its own heading after those of the sections it lies under (by `#` level)."""
    paths: dict[str, list[str]] = {}
    stack: list[tuple[int, str]] = []
    for section in split_sections(text):
        line = text[section.start:section.start + 7]
        level = len(line) - len(line.lstrip("#"))
        if not section.heading or level == 0:
            paths[section.section_id] = []
            continue
        stack = [(lvl, heading) for lvl, heading in stack if lvl < level] + [(level, section.heading)]
        paths[section.section_id] = [heading for _, heading in stack]
    return paths


@dataclass
class Passage:
    """One pooled (question, chunk) to judge: the chunk's characters in its document [start, end) (what an evidence
    selection is measured against), its section's heading path and the LLM judge's frozen grade, if any."""

    qid: str
    chunk_id: str
    doc_id: str
    section: str
    title: str
    methods: str
    best_rank: int
    start: int
    end: int
    headings: list[str]
    suggestion: int | None

    def summary(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "doc_id": self.doc_id, "section": self.section, "title": self.title,
                "methods": self.methods, "best_rank": self.best_rank, "headings": self.headings, "start": self.start,
                "suggestion": self.suggestion}


@dataclass
class JudgingPool:
    """The questions of a version's pool, in pool order, with the documents their passages come from."""

    questions: list[dict[str, Any]]
    passages: dict[str, list[Passage]]
    texts: dict[str, str]
    sections: dict[str, list[Section]] = field(default_factory=dict)

    def passage(self, qid: str, chunk_id: str) -> Passage | None:
        return next((p for p in self.passages.get(qid, []) if p.chunk_id == chunk_id), None)

    def size(self) -> int:
        return sum(len(passages) for passages in self.passages.values())

    def texts_of(self, qid: str) -> list[dict[str, Any]]:
        """Each passage of a question as text: its document before it (up to CONTEXT characters), the passage (the
        document's own characters, or the title of a chunk without body) and the document after it."""
        shown = []
        for p in self.passages.get(qid, []):
            text, selectable = self.texts[p.doc_id], p.end > p.start
            shown.append({"chunk_id": p.chunk_id, "before": text[max(0, p.start - CONTEXT):p.start],
                          "passage": text[p.start:p.end] if selectable else p.title,
                          "after": text[p.end:p.end + CONTEXT] if selectable else "", "selectable": selectable})
        return shown

    def sections_of(self, doc_id: str) -> list[Section]:
        if doc_id not in self.sections:
            self.sections[doc_id] = split_sections(self.texts[doc_id])
        return self.sections[doc_id]


def judging_pool(pool: pd.DataFrame, chunks: pd.DataFrame, documents: pd.DataFrame,
                 suggestions: pd.DataFrame | None) -> JudgingPool:
    """The pool (analysis.pooling.unjudged_pool's rows, in its order) as passages in their documents; `suggestions`
    are the LLM judge's frozen judgements (qid, chunk_id, judge) or None."""
    spans = {c: (int(s), int(e)) for c, s, e in zip(chunks["chunk_id"], chunks["start"], chunks["end"])}
    needed = set(pool["doc_id"])
    texts = {d: t for d, t in zip(documents["doc_id"], documents["text"]) if d in needed}
    suggested: dict[tuple[str, str], int] = {}
    if suggestions is not None:
        known = suggestions[suggestions["judge"].notna()]
        suggested = {(q, c): int(g) for q, c, g in zip(known["qid"], known["chunk_id"], known["judge"])}
    paths = {doc_id: heading_paths(text) for doc_id, text in texts.items()}
    questions: list[dict[str, Any]] = []
    passages: dict[str, list[Passage]] = {}
    for row in pool.itertuples(index=False):
        if row.qid not in passages:
            questions.append({"qid": row.qid, "question": row.question})
            passages[row.qid] = []
        start, end = spans[row.chunk_id]
        passages[row.qid].append(Passage(
            row.qid, row.chunk_id, row.doc_id, row.section, row.title if isinstance(row.title, str) else "",
            row.methods, int(row.best_rank), start, end, paths[row.doc_id].get(row.section, []),
            suggested.get((row.qid, row.chunk_id))))
    return JudgingPool(questions, passages, texts)


def utf16_offset(text: str, units: int) -> int:
    """The character offset of `units` UTF-16 code units into text (a browser's string offsets), a ValueError when
    it falls inside a character."""
    prefix = text.encode("utf-16-le")[:2 * units]
    if len(prefix) != 2 * units:
        raise ValueError(f"offset {units} is past the passage's end")
    try:
        return len(prefix.decode("utf-16-le"))
    except UnicodeDecodeError:
        raise ValueError(f"offset {units} falls inside a character") from None


def selected_evidence(pool: JudgingPool, passage: Passage, start16: int, end16: int, quote: str) -> dict[str, Any]:
    """A selection in a passage (UTF-16 offsets, as the page measures them, and the text it saw) as evidence: the
    quote, its occurrence when it repeats, and its character offsets in the document, checked by evidence_span (the
    check every label's evidence passes) so the frozen label resolves to exactly these characters. InputError
    otherwise."""
    text = pool.texts[passage.doc_id]
    where = f"question {passage.qid}, passage {passage.chunk_id}"
    shown = text[passage.start:passage.end]
    try:
        low, high = utf16_offset(shown, start16), utf16_offset(shown, end16)
    except ValueError as error:
        raise InputError(None, where, f"the selection is not in the passage ({error})",
                         "Select text inside the passage.") from None
    start, end = passage.start + low, passage.start + high
    if text[start:end] != quote:
        raise InputError(None, where, "the selection does not match the passage's text",
                         "Reload the page and select again.")
    found, occurrence = quote_of(text, start, end)
    if evidence_span(text, pool.sections_of(passage.doc_id), found, occurrence, passage.section, passage.doc_id,
                     where) != (start, end):
        raise InputError(None, where, "the quote does not resolve to the selection", "Select a longer quote.")
    return {"quote": found, "occurrence": occurrence, "start": start, "end": end}


class JudgmentLog:
    """One judge's judgments of one version: an append-only JSONL file, one event per judgment (grade, skip,
    evidence, notes: the whole state of one (question, passage)), written and fsynced at once. The latest event per
    (question, passage) is in force; an event must say which one it replaces (`seen`, its number), so two tabs never
    overwrite each other's judgment unseen."""

    def __init__(self, path: Path, judge: str) -> None:
        self.path, self.judge = Path(path), judge
        self.lock = threading.Lock()
        self.latest: dict[tuple[str, str], dict[str, Any]] = {}
        self.count = 0
        self.torn = _drop_torn_tail(self.path)
        for event in read_events(self.path):
            self._keep(event)

    def _keep(self, event: dict[str, Any]) -> None:
        self.count += 1
        self.latest[(event["qid"], event["chunk_id"])] = {**event, "n": self.count}

    def append(self, event: dict[str, Any], seen: int) -> tuple[bool, dict[str, Any] | None]:
        """Write the event unless (question, passage) has a newer one than `seen` (0: none); (written, the event
        now in force)."""
        key = (event["qid"], event["chunk_id"])
        with self.lock:
            current = self.latest.get(key)
            if (current["n"] if current else 0) != seen:
                return False, current
            line = json.dumps({**event, "judge": self.judge}, ensure_ascii=False, sort_keys=True) + "\n"
            self.path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(descriptor, line.encode("utf-8"))
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            self._keep({**event, "judge": self.judge})
            return True, self.latest[key]


def _drop_torn_tail(path: Path) -> bool:
    """Cut a last line left without its newline (a write a kill interrupted): it is the one judgment being typed."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return False
    with open(path, "r+b") as handle:
        handle.truncate(data.rfind(b"\n") + 1)
    return True


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of a judgments file in order; a line that is not a judgment is an InputError naming it."""
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                event = None
            grade = event.get("grade") if isinstance(event, dict) else None
            if not (isinstance(event, dict) and isinstance(event.get("qid"), str)
                    and isinstance(event.get("chunk_id"), str) and (grade is None or grade in GRADES)):
                raise InputError(path, f"line {number}", "is not a judgment (a JSON object with qid, chunk_id and a "
                                 "grade from 0 to 3 or null)", "Restore the line from a backup or remove it; "
                                 "judgments files are written by `rankbench judge` only.")
            yield event


def judgments_folder(project: Path, qset: str) -> Path:
    return Path(project) / "judgments" / qset


def latest_judgments(folder: Path) -> pd.DataFrame:
    """The judgments in force of every judge of a folder (one row per judge, question and passage), graded or
    skipped, with who decided and the suggestion shown."""
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for event in read_events(path):
            latest[(event["qid"], event["chunk_id"])] = event
        rows += [{"judge": path.stem, **{k: event.get(k) for k in ("qid", "chunk_id", "doc_id", "section", "grade",
                                                                  "decided", "suggestion")},
                  "evidence": (event.get("evidence") or {}).get("quote"),
                  "occurrence": (event.get("evidence") or {}).get("occurrence")}
                 for event in latest.values()]
    columns = ["judge", "qid", "chunk_id", "doc_id", "section", "grade", "decided", "suggestion", "evidence",
               "occurrence"]
    return pd.DataFrame(rows, columns=columns)


def filled_labels(judgments: pd.DataFrame, judges: Sequence[str], where: Path) -> pd.DataFrame:
    """The graded judgments of `judges` (all when empty) as pool-import's filled rows (qid, doc_id, section, grade,
    evidence, occurrence): a section judged through several passages takes its best grade and that passage's
    evidence. People who gave one passage different grades are an InputError: resolve, or freeze one judge's labels."""
    graded = judgments[judgments["grade"].notna()].copy()
    if judges:
        unknown = sorted(set(judges) - set(judgments["judge"]))
        if unknown:
            raise InputError(where, None, f"holds no judgment of {unknown[0]} (judges: "
                             f"{', '.join(sorted(set(judgments['judge']))) or 'none'})", "Give a judge who judged.")
        graded = graded[graded["judge"].isin(judges)]
    split = graded.groupby(["qid", "chunk_id"])["grade"].nunique()
    if (split > 1).any():
        qid, chunk_id = split[split > 1].index[0]
        raise InputError(where, f"question {qid}, passage {chunk_id}", f"is graded differently by the judges "
                         f"({int((split > 1).sum())} passages are)", "Resolve the disagreements listed by "
                         "`rankbench judge --agreement`, or freeze one judge's labels with --judge NAME.")
    graded["grade"] = graded["grade"].astype(int)
    graded["has_evidence"] = graded["evidence"].notna()
    best = graded.sort_values(["qid", "doc_id", "section", "grade", "has_evidence", "chunk_id"],
                              ascending=[True, True, True, False, False, True], kind="stable")
    best = best.drop_duplicates(["qid", "doc_id", "section"])
    return best[["qid", "doc_id", "section", "grade", "evidence", "occurrence"]].reset_index(drop=True)


def agreement_tables(judgments: pd.DataFrame, llm: pd.DataFrame | None, resamples: int = 2000,
                     seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cohen's kappa (unweighted and quadratic-weighted, each with a 95% bootstrap interval) and exact agreement
    between each two people and between each person and the LLM judge (its frozen judgements: qid, chunk_id, judge),
    over the passages both graded; and the disagreements, one row per pair of raters and passage."""
    graded = judgments[judgments["grade"].notna()]
    raters = {name: dict(zip(zip(frame["qid"], frame["chunk_id"]), frame["grade"].astype(int)))
              for name, frame in graded.groupby("judge", sort=True)}
    accepted = {name: set(zip(frame["qid"], frame["chunk_id"]))
                for name, frame in graded[graded["decided"] == ACCEPTED].groupby("judge", sort=True)}
    pairs = list(combinations(sorted(raters), 2))
    if llm is not None:
        known = llm[llm["judge"].notna()]
        raters[LLM_JUDGE] = {(q, c): int(g) for q, c, g in zip(known["qid"], known["chunk_id"], known["judge"])}
        pairs += [(name, LLM_JUDGE) for name in sorted(raters) if name != LLM_JUDGE]
    stats, disagreements = [], []
    for a, b in pairs:
        both = sorted(set(raters[a]) & set(raters[b]))
        first = np.array([raters[a][key] for key in both], dtype=np.int64)
        second = np.array([raters[b][key] for key in both], dtype=np.int64)
        counts = confusion(first, second)
        n = len(both)
        row: dict[str, Any] = {"rater_a": a, "rater_b": b, "n": n,
                               "accepted": len(accepted.get(a, set()) & set(both)) if b == LLM_JUDGE else None,
                               "exact": float(np.trace(counts) / n) if n else float("nan")}
        for name, weights in (("kappa", None), ("kappa_quadratic", "quadratic")):
            row[name] = weighted_kappa(counts, weights) if n else float("nan")
            row[f"{name}_low"], row[f"{name}_high"] = kappa_interval(first, second, resamples, seed, weights)
        stats.append(row)
        disagreements += [{"rater_a": a, "rater_b": b, "qid": q, "chunk_id": c, "grade_a": raters[a][(q, c)],
                           "grade_b": raters[b][(q, c)]} for q, c in both if raters[a][(q, c)] != raters[b][(q, c)]]
    return (pd.DataFrame(stats, columns=["rater_a", "rater_b", "n", "accepted", "exact", "kappa", "kappa_low",
                                         "kappa_high", "kappa_quadratic", "kappa_quadratic_low",
                                         "kappa_quadratic_high"]),
            pd.DataFrame(disagreements, columns=["rater_a", "rater_b", "qid", "chunk_id", "grade_a", "grade_b"]))


def _value(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:.3f}"


def _interval(low: float, high: float) -> str:
    return "–" if pd.isna(low) else f"{low:.2f} to {high:.2f}"


def agreement_markdown(qset: str, stats: pd.DataFrame, disagreements: pd.DataFrame) -> str:
    """agreement.md: the kappa table and the disagreements to resolve (same inputs, same bytes)."""
    lines = [f"# Agreement of the judges of {qset}", "",
             "Over the passages both raters graded (skips left out); 95% bootstrap intervals. Against the LLM judge, "
             "`accepted` counts the grades a person gave by accepting its suggestion: agreement there is partly the "
             "suggestion's own.", ""]
    if stats.empty:
        lines.append("No two raters graded the same passage yet.")
    else:
        lines += ["| rater | rater | pairs | accepted | exact | kappa | 95% CI | weighted kappa (quadratic) | 95% CI |",
                  "|---|---|---:|---:|---:|---:|---|---:|---|"]
        lines += [f"| {r.rater_a} | {r.rater_b} | {r.n} | {'' if pd.isna(r.accepted) else int(r.accepted)} | "
                  f"{_value(r.exact)} | {_value(r.kappa)} | {_interval(r.kappa_low, r.kappa_high)} | "
                  f"{_value(r.kappa_quadratic)} | {_interval(r.kappa_quadratic_low, r.kappa_quadratic_high)} |"
                  for r in stats.itertuples(index=False)]
    lines += ["", f"## Disagreements ({len(disagreements)})", ""]
    if len(disagreements):
        lines += ["| question | passage | rater | grade | rater | grade |", "|---|---|---|---:|---|---:|"]
        lines += [f"| {d.qid} | {d.chunk_id} | {d.rater_a} | {d.grade_a} | {d.rater_b} | {d.grade_b} |"
                  for d in disagreements.itertuples(index=False)]
    else:
        lines.append("None.")
    return "\n".join(lines) + "\n"


def now() -> str:
    """The time an event is written, UTC to the second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def progress(pool: JudgingPool, latest: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, Any]:
    """Judged (graded or skipped) passages, overall and per question, and the first passage not judged yet."""
    per_question, first = {}, None
    for question in pool.questions:
        qid = question["qid"]
        done = 0
        for p in pool.passages[qid]:
            event = latest.get((qid, p.chunk_id))
            if event and (event.get("grade") is not None or event.get("skip")):
                done += 1
            elif first is None:
                first = {"qid": qid, "chunk_id": p.chunk_id}
        per_question[qid] = done
    return {"judged": sum(per_question.values()), "size": pool.size(), "per_question": per_question,
            "next": first}
