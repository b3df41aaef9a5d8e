"""Label validation before anything runs: hard errors stop the run, findings go to a page (report/labels.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rankbench.corpus.evidence import resolve_evidence
from rankbench.corpus.sections import split_sections
from rankbench.corpus.validity import in_force
from rankbench.errors import InputError
from rankbench.io.loaders import read_jsonl
from rankbench.io.qrels import build_qrels

FINDING_COLUMNS = ["problem", "qid", "doc_id", "section", "grade"]


def document_sections(documents: pd.DataFrame) -> dict[str, set[str]]:
    """Section ids of every document."""
    return {doc_id: {s.section_id for s in split_sections(text)}
            for doc_id, text in zip(documents["doc_id"], documents["text"])}


def question_lines(path: Path | str) -> dict[str, int]:
    """qid -> line of a native version's JSONL file (empty for other files), for messages that name the line."""
    if not str(path).endswith(".jsonl") or not Path(path).is_file():
        return {}
    return {str(record.get("qid")): number for number, record in read_jsonl(Path(path))}


def _label_where(path: Path | str, qid: str) -> str:
    line = question_lines(path).get(qid)
    return f"line {line} (qid {qid!r})" if line else f"qid {qid!r}"


def check_label_targets(labels: pd.DataFrame, documents: pd.DataFrame, path: Path | str) -> pd.DataFrame:
    """Every label names an existing document and, when it names one, an existing section of it, and its evidence
    (if any) is found in that document (the error names the question's line in a JSONL version): the labels with
    their evidence resolved to offsets (corpus.evidence.resolve_evidence).

    Only the labelled documents are split into sections, so the check stays cheap on a large corpus.
    """
    sections = document_sections(documents[documents["doc_id"].isin(labels["doc_id"])])
    known = set(documents["doc_id"])
    for row in labels.itertuples(index=False):
        if row.doc_id not in known:
            raise InputError(path, _label_where(path, row.qid),
                             f"labels document {row.doc_id!r}, which is not in the corpus",
                             "Fix the doc_id (in place in a draft; in a new question-set version once frozen), "
                             "or add the document to the corpus.")
        if pd.notna(row.section) and row.section not in sections[row.doc_id]:
            listed = ", ".join(sorted(sections[row.doc_id]))
            raise InputError(path, _label_where(path, row.qid),
                             f"labels section {row.section!r} of {row.doc_id!r}, which has no such section "
                             f"(it has: {listed})",
                             "Section ids are slugs of the headings; fix the label (in place in a draft; "
                             "in a new question-set version once frozen).")
    return resolve_evidence(labels, documents, path, lambda qid: _label_where(path, qid))


def label_findings(questions: pd.DataFrame, labels: pd.DataFrame, documents: pd.DataFrame,
                   chunks: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Problems that do not stop the run: out-of-date or staff-only evidence, questions with no relevant label, and
    labels that map to no chunk of a chunker in `chunks` (by name; the chunker lost that evidence)."""
    merged = labels.merge(questions[["qid", "audience", "as_of"]], on="qid").merge(
        documents[["doc_id", "valid_from", "valid_to", "audience"]], on="doc_id", suffixes=("", "_doc"))
    positive = merged["grade"] > 0
    stale = positive & ~in_force(merged["valid_from"], merged["valid_to"], merged["as_of"])
    leak = positive & (merged["audience"] == "public") & (merged["audience_doc"] != "public")
    findings = [merged.loc[stale].assign(problem="relevant label not in force at the question's as_of"),
                merged.loc[leak].assign(problem="public question labelled with a staff-only document")]
    answerable = set(labels.loc[labels["grade"] > 0, "qid"])
    unanswerable = questions.loc[~questions["qid"].isin(answerable), ["qid"]]
    findings.append(unanswerable.assign(problem="no relevant label (unanswerable: excluded from averages)",
                                        doc_id=None, section=None, grade=None))
    for chunker, frame in sorted((chunks or {}).items()):
        unmapped = build_qrels(labels, frame)[1]
        findings.append(unmapped.assign(problem=f"label maps to no chunk of chunker {chunker}"))
    return pd.concat([f[FINDING_COLUMNS] for f in findings if not f.empty] or
                     [pd.DataFrame(columns=FINDING_COLUMNS)], ignore_index=True)
