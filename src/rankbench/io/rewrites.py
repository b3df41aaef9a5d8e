"""Rewrites frozen in a file (e.g. made by an LLM): one rewritten query per question, checked against the version."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.loaders import read_jsonl


def load_rewrites(path: Path, questions: pd.DataFrame) -> pd.DataFrame:
    """`qid, question` with each question's rewritten text, in question order.

    The file is JSONL, one line per question: {"qid": "q001", "query": "rewritten text"}; every question of the
    version needs exactly one line, and no line may name another qid.
    """
    texts: dict[str, str] = {}
    for number, record in read_jsonl(path):
        qid, query = record.get("qid"), record.get("query")
        if not isinstance(qid, str) or not isinstance(query, str) or not query.strip():
            raise InputError(path, f"line {number}", "needs a string `qid` and a non-empty string `query`",
                             'Each line reads {"qid": "q001", "query": "rewritten text"}.')
        if qid in texts:
            raise InputError(path, f"line {number}", f"rewrites qid {qid!r} a second time",
                             "Keep one rewrite per question.")
        texts[qid] = query
    known = set(questions["qid"])
    unknown = sorted(texts.keys() - known)
    if unknown:
        raise InputError(path, f"qid {unknown[0]!r}", f"is not a question of this version ({len(unknown)} unknown)",
                         "Rewrite the questions of the version the file sits next to.")
    missing = [qid for qid in questions["qid"] if qid not in texts]
    if missing:
        raise InputError(path, f"qid {missing[0]!r}", f"has no rewrite ({len(missing)} questions missing)",
                         "Give every question a line (copy the question unchanged if it needs no rewrite).")
    return pd.DataFrame({"qid": questions["qid"].to_numpy(), "question": [texts[q] for q in questions["qid"]]})
