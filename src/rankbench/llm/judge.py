"""LLM relevance judgements (0–3) of the pooled top-k of every method, merged into a new question-set version."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.io.progress import tracked
from rankbench.io.qrels import build_qrels
from rankbench.llm.chat import Chat
from rankbench.llm.prompts import judge_messages, parse_grade

JUDGEMENT_COLUMNS = ["qid", "kind", "chunk_id", "doc_id", "section", "judge", "human", "seconds"]


def judge_pool(chat: Chat, pooled: pd.DataFrame, questions: pd.DataFrame, labels: pd.DataFrame,
               chunks: pd.DataFrame) -> pd.DataFrame:
    """One row per pooled pair: the judge's grade (NA when unparsable), the human grade (NA when unlabelled),
    the chunk's section (NA when it spans several) and the seconds the request took (0 from the cache)."""
    texts = dict(zip(chunks["chunk_id"], passage_text(chunks)))
    sections = dict(zip(chunks["chunk_id"], chunks["sections"]))
    asked = dict(zip(questions["qid"], questions["question"]))
    grades, seconds = [], []
    for qid, chunk_id in tracked(zip(pooled["qid"], pooled["chunk_id"]), len(pooled), "LLM judge", "pairs"):
        start, sent_before = time.perf_counter(), chat.sent
        reply = chat.text(judge_messages(asked[qid], texts[chunk_id]), max_tokens=2)
        seconds.append(time.perf_counter() - start if chat.sent > sent_before else 0.0)
        grades.append(parse_grade(reply))
    qrels, _ = build_qrels(labels, chunks)
    human = qrels[qrels["grain"] == "chunk"].rename(columns={"item_id": "chunk_id", "grade": "human"})
    judged = pooled.assign(judge=pd.array(grades, dtype="Int64"), seconds=seconds)
    judged["section"] = [s[0] if len(s) == 1 else None for s in judged["chunk_id"].map(sections)]
    judged = judged.merge(human[["qid", "chunk_id", "human"]], on=["qid", "chunk_id"], how="left")
    judged["human"] = judged["human"].astype("Int64")
    judged = judged.merge(questions[["qid", "kind"]], on="qid", how="left")
    return judged[JUDGEMENT_COLUMNS]


def merge_labels(labels: pd.DataFrame, judged: pd.DataFrame) -> pd.DataFrame:
    """Human labels, plus a judged label for each pooled (question, document, section) that no human label covers.

    Human labels always win. Questions without any human label (unanswerable) keep none: a person decided that
    nothing answers them. A section judged through several chunks takes its best grade; chunks that span several
    sections (fixed windows) add nothing, since a label must name one section or the whole document.
    """
    labelled = set(labels["qid"])
    covered = judged["human"].notna()
    new = judged[~covered & judged["judge"].notna() & judged["section"].notna() & judged["qid"].isin(labelled)]
    new = (new.groupby(["qid", "doc_id", "section"], as_index=False)["judge"].max()
           .rename(columns={"judge": "grade"}))
    existing = labels.set_index(["qid", "doc_id", "section"]).index
    new = new[~new.set_index(["qid", "doc_id", "section"]).index.isin(existing)]
    new["grade"] = new["grade"].astype(np.int64)
    # a judged label quotes no evidence: the labels' other columns (evidence spans) stay null on it
    merged = pd.concat([labels, new.reindex(columns=labels.columns).astype(labels.dtypes.to_dict())],
                       ignore_index=True)
    return merged.sort_values(["qid", "doc_id", "section"], na_position="first", kind="stable").reset_index(drop=True)
