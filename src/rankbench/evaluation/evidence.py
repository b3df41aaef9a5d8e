"""Evidence grain: how much of a question's evidence the top k chunks hold, how much of what they send is evidence,
and what they cost in prompt tokens. Fair to any chunker: a long window that covers the evidence wins recall but
pays in precision and tokens.

A question is scored at this grain when each of its relevant labels carries evidence (corpus.evidence resolves
quotes to offsets); the others keep the chunk and document grains' rules.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rankbench.corpus.tokens import Tokenizer

EVIDENCE_GRAIN = "evidence"
PROMPT_TOKENS = "prompt_tokens"
EVIDENCE_METRICS = ("evidence_recall", "evidence_precision", PROMPT_TOKENS)

Intervals = list[tuple[int, int]]


def merged(intervals: Sequence[tuple[int, int]]) -> Intervals:
    """Sorted, disjoint [start, end) intervals covering the same characters (empty ones dropped)."""
    out: Intervals = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def overlap(a: Intervals, b: Intervals) -> int:
    """Characters two merged interval lists share."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def evidence_questions(labels: pd.DataFrame, relevance_threshold: int) -> list[str]:
    """The questions scored at evidence grain: some relevant label, and evidence on each of them (sorted)."""
    if "evidence_start" not in labels.columns:
        return []
    relevant = labels[labels["grade"] >= relevance_threshold]
    has = relevant["evidence_start"].notna().groupby(relevant["qid"]).all()
    return sorted(has.index[has.to_numpy(dtype=bool)].astype(str))


def evidence_per_query(run: pd.DataFrame, chunks: pd.DataFrame, labels: pd.DataFrame, questions: pd.DataFrame,
                       ks: Sequence[int], relevance_threshold: int, tokens: Tokenizer) -> pd.DataFrame:
    """Per question and k: evidence recall (share of the evidence characters inside the top k chunks, union over
    chunks), evidence precision (those characters / the characters of the top k chunks; 0 when nothing is retrieved)
    and prompt tokens (of the top k chunks' texts), for the evidence_questions; columns as the per-query metrics."""
    qids = evidence_questions(labels, relevance_threshold)
    columns = ["qid", "kind", "grain", "metric", "k", "value"]
    if not qids:
        return pd.DataFrame(columns=columns)
    relevant = labels[(labels["grade"] >= relevance_threshold) & labels["qid"].isin(qids)]
    evidence = {qid: {doc: merged(list(zip(group["evidence_start"].astype(int), group["evidence_end"].astype(int))))
                      for doc, group in frame.groupby("doc_id", sort=True)}
                for qid, frame in relevant.groupby("qid", sort=True)}
    # chunk id -> (document, start, end); an id the chunker never made (a foreign run) holds no character of the corpus
    positions = {chunk_id: (doc, int(start), int(end))
                 for chunk_id, doc, start, end in zip(chunks["chunk_id"], chunks["doc_id"], chunks["start"],
                                                      chunks["end"])}
    retrieved_ids = set(run["chunk_id"])
    cost = {chunk_id: tokens.count(text) for chunk_id, text in zip(chunks["chunk_id"], chunks["text"])
            if chunk_id in retrieved_ids}
    kinds = dict(zip(questions["qid"], questions["kind"]))
    ranked = run[run["qid"].isin(qids)].sort_values(["qid", "rank"])
    by_question = {qid: frame["chunk_id"].tolist() for qid, frame in ranked.groupby("qid", sort=True)}
    rows: list[tuple[str, object, str, str, int, float]] = []
    for qid in qids:
        wanted = evidence[qid]
        total = sum(end - start for spans_ in wanted.values() for start, end in spans_)
        retrieved = by_question.get(qid, [])
        for k in ks:
            top = [positions[chunk_id] for chunk_id in retrieved[:k] if chunk_id in positions]
            sent_spans: dict[str, list[tuple[int, int]]] = {}
            for doc, start, end in top:
                sent_spans.setdefault(doc, []).append((start, end))
            covered = sum(overlap(wanted[doc], merged(parts)) for doc, parts in sent_spans.items() if doc in wanted)
            sent = sum(end - start for _, start, end in top)
            values = (covered / total, covered / sent if sent else 0.0,
                      float(sum(cost.get(chunk_id, 0) for chunk_id in retrieved[:k])))
            rows.extend((qid, kinds.get(qid), EVIDENCE_GRAIN, metric, k, value)
                        for metric, value in zip(EVIDENCE_METRICS, values))
    frame = pd.DataFrame(rows, columns=columns)
    frame["value"] = frame["value"].astype(np.float64)
    return frame
