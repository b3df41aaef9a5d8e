"""Failure analysis: per method, the questions it fails at rank 1 and those whose evidence is missing from the top
k, what it returned instead, and for multi-stage methods whether the miss is a recall failure (the evidence never
entered the candidate pool) or a ranking failure (in the pool, ranked too low); plus a log of every stage's ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rankbench.io.markdown import natural_key, natural_order
from rankbench.io.ranked_lists import collapse_to_documents
from rankbench.retrieval.registry import method_inputs, method_setting, method_type

FAILURE_COLUMNS = ["method", "qid", "kind", "question", "failure", "first_relevant_rank", "expected", "returned",
                   "class", "input_ranks"]
STAGE_COLUMNS = ["qid", "method", "stage", "rank", "chunk_id", "doc_id", "title", "score"]
RECALL, RANKING = "recall failure", "ranking failure"


def grain_ranks(run: pd.DataFrame, grain: str) -> pd.DataFrame:
    """qid, item_id, rank of a run at a grain (document grain: each document at its first chunk's rank)."""
    ranked = collapse_to_documents(run) if grain == "document" else run
    return ranked.assign(item_id=ranked["doc_id" if grain == "document" else "chunk_id"])[["qid", "item_id", "rank"]]


def first_relevant(run: pd.DataFrame, relevant: pd.DataFrame, grain: str) -> pd.Series:
    """Per question, the rank (at the grain) of the first relevant result."""
    hits = grain_ranks(run, grain).merge(relevant, on=["qid", "item_id"])
    return hits.groupby("qid")["rank"].min()


def first_relevant_chunk(run: pd.DataFrame, relevant: pd.DataFrame, grain: str) -> pd.Series:
    """Per question, the rank of the first chunk relevant at the grain (document grain: any chunk of a relevant
    document), counted in chunks as a rerank's depth counts its candidates."""
    chunks = run.assign(item_id=run["doc_id" if grain == "document" else "chunk_id"])[["qid", "item_id", "rank"]]
    return chunks.merge(relevant, on=["qid", "item_id"]).groupby("qid")["rank"].min()


def candidate_depth(spec: Mapping[str, Any]) -> int | None:
    """How much of each input run a multi-stage method takes as candidates (rerank: its depth; fusion: all)."""
    return method_setting(spec, "depth") if "depth" in method_type(spec).keys else None


def _by_question(qids: pd.Series, texts: pd.Series) -> dict[str, list[str]]:
    """The texts of each question, in row order (a dict: per-question lookups in a loop are dict-fast)."""
    grouped: dict[str, list[str]] = {}
    for qid, text in zip(qids.tolist(), texts.tolist()):
        grouped.setdefault(qid, []).append(text)
    return grouped


def _expected(labels: pd.DataFrame, threshold: int, shown: int = 5) -> dict[str, str]:
    """Per question, its relevant labels (best grade first, ids in natural order), the first `shown` then a count."""
    rows = labels[labels["grade"] >= threshold]
    rows = rows.assign(natural=rows["doc_id"].map(natural_key)).sort_values(
        ["qid", "grade", "natural"], ascending=[True, False, True])
    text = rows["doc_id"] + rows["section"].map(lambda s: f"#{s}" if isinstance(s, str) and s else "") \
        + " (" + rows["grade"].astype(str) + ")"
    return {qid: ", ".join(items[:shown]) + (f", … {len(items) - shown} more" if len(items) > shown else "")
            for qid, items in _by_question(rows["qid"], text).items()}


def _returned(run: pd.DataFrame, grain: str, titles: pd.Series, n: int) -> dict[str, str]:
    ranked = collapse_to_documents(run) if grain == "document" else run
    top = ranked[ranked["rank"] <= n]
    ids = top["doc_id" if grain == "document" else "chunk_id"]
    title = top["doc_id"].map(titles).fillna("")
    text = top["rank"].astype(str) + ". " + ids + title.map(lambda t: f" — {t}" if t else "")
    return {qid: "; ".join(items) for qid, items in _by_question(top["qid"], text).items()}


def analyse(runs: Mapping[str, pd.DataFrame], specs: Mapping[str, Mapping[str, Any]],
            qrels: Mapping[str, pd.DataFrame], questions: pd.DataFrame, labels: pd.DataFrame,
            titles: pd.Series, grain: str, k: int,
            relevance_threshold: int = 1, shown: int = 3) -> pd.DataFrame:
    """One row per (method, question, failure): 'rank 1' (nothing relevant first) or 'top k' (nothing relevant in
    the top k), over the questions with a relevant label; multi-stage methods get a class and their inputs' ranks.
    qrels maps each method to the qrels of its chunker (a method's inputs share it); titles is indexed by doc_id."""
    expected = _expected(labels, relevance_threshold)
    rows = []
    for method in sorted(runs):
        run, spec, judged = runs[method], specs[method], qrels[method]
        relevant = judged[(judged["grain"] == grain) & (judged["grade"] >= relevance_threshold)][["qid", "item_id"]]
        evaluated = questions[questions["qid"].isin(relevant["qid"])].set_index("qid")
        first = first_relevant(run, relevant, grain).reindex(evaluated.index)
        returned = _returned(run, grain, titles, shown)
        inputs = [name for name in method_inputs(spec) if name in runs]
        candidates = candidate_depth(spec)
        # the class is decided and shown in one unit, chunk ranks: the unit of a rerank's depth
        anywhere = [first_relevant_chunk(runs[name], relevant, grain).reindex(evaluated.index) for name in inputs]
        # per evaluated question, by position: whether an input pooled its evidence, and the inputs' ranks
        pooled = np.zeros(len(evaluated), dtype=bool)
        for ranks in anywhere:
            pooled |= (ranks.notna() & (ranks <= (candidates or np.inf))).to_numpy()
        input_ranks = ["; ".join(texts) for texts in zip(*(
            [f"{name}: {'chunk ' + str(int(r)) if pd.notna(r) else 'not retrieved'}" for r in ranks.to_numpy()]
            for name, ranks in zip(inputs, anywhere)))] if inputs else [""] * len(evaluated)
        columns = list(zip(evaluated.index, evaluated["kind"].to_numpy(), evaluated["question"].to_numpy(),
                           first.to_numpy(), pooled, input_ranks))
        for failure, failed in (("rank 1", ~(first == 1)), (f"top {k}", ~(first <= k))):
            for (qid, kind, question, rank, in_candidates, their_ranks), fails in zip(columns, failed.to_numpy()):
                if fails:
                    rows.append({"method": method, "qid": qid, "kind": kind, "question": question,
                                 "failure": failure, "first_relevant_rank": rank, "expected": expected.get(qid, ""),
                                 "returned": returned.get(qid, "(nothing)"),
                                 "class": (RANKING if in_candidates else RECALL) if inputs else "",
                                 "input_ranks": their_ranks})
    frame = pd.DataFrame(rows, columns=FAILURE_COLUMNS)
    frame["first_relevant_rank"] = frame["first_relevant_rank"].astype("Int64")
    return frame.sort_values(["method", "failure", "qid"], key=natural_order, kind="stable", ignore_index=True)


def stage_log(runs: Mapping[str, pd.DataFrame], specs: Mapping[str, Mapping[str, Any]], titles: pd.Series,
              k: int) -> pd.DataFrame:
    """For every method and question, the top `k` chunk ids of each stage (its inputs, recursively, then itself);
    titles: each document's title, indexed by doc_id."""
    frames, tops = [], {}  # each run's top k with titles, once however many methods it is a stage of
    for method in sorted(runs):
        stages: list[str] = []
        queue = [method]
        while queue:
            name = queue.pop()
            if name not in stages and name in runs:
                stages.insert(0, name)
                queue += method_inputs(specs[name])
        for stage in stages:
            if stage not in tops:
                top = runs[stage][runs[stage]["rank"] <= k]
                tops[stage] = top.assign(title=top["doc_id"].map(titles))
            frames.append(tops[stage].assign(method=method, stage=stage))
    log = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=STAGE_COLUMNS)
    return log[STAGE_COLUMNS].sort_values(["qid", "method", "stage", "rank"], kind="stable", ignore_index=True)
