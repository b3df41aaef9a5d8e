"""Second-stage reranking: re-score the top N of an input run; results below N keep their order underneath.

Degraded mode: when the scorer cannot be built or fails while scoring, the input order is kept and the run says
so (`degraded` True, `degraded_reason` the error), so one broken model does not stop the whole workflow."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from rankbench.io.ranked_lists import RUN_COLUMNS, order_by_trec_rule

PairScorer = Callable[[pd.DataFrame], np.ndarray]


def rerank(run: pd.DataFrame, rerank_depth: int, score_pairs: PairScorer) -> pd.DataFrame:
    """Reranked run with a `first_stage_rank` column: the top `rerank_depth` re-scored (a reranker cannot recover
    what they miss), the rest below in their first-stage order. A scorer that gives every pair one score raises."""
    head = run[run["rank"] <= rerank_depth].copy()
    tail = run[run["rank"] > rerank_depth].copy()
    head["first_stage_rank"] = head["rank"]
    scores = np.asarray(score_pairs(head), dtype=np.float64)
    if len(scores) > 1 and np.ptp(scores) == 0:  # over the whole run: one question's pairs may well tie
        raise ValueError(f"the scorer gives all {len(scores)} pairs the same score ({scores[0]:.6g}): it cannot rank "
                         "them (a broken or untrained model?)")
    head["score"] = scores
    head = order_by_trec_rule(head)
    tail["first_stage_rank"] = tail["rank"]
    floor = head.groupby("qid")["score"].min()
    # Scores under the reranked head keep the tail in first-stage order (a run's rank is authoritative).
    tail["score"] = tail["qid"].map(floor).astype(np.float64).fillna(0.0) - tail["rank"].astype(np.float64)
    merged = order_by_trec_rule(pd.concat([head, tail], ignore_index=True))
    return merged[RUN_COLUMNS + ["first_stage_rank"]]


def rerank_or_fallback(run: pd.DataFrame, rerank_depth: int, make_scorer: Callable[[], PairScorer]) -> pd.DataFrame:
    """`rerank` with a scorer built by make_scorer(); any failure of either gives the input order, marked degraded."""
    try:
        reranked = rerank(run, rerank_depth, make_scorer())
        return reranked.assign(degraded=False, degraded_reason="")
    except Exception as error:  # noqa: BLE001 - any scorer failure degrades this run only, on purpose
        reason = f"{type(error).__name__}: {error}"
        logging.warning("reranker failed, keeping the input order (degraded run): %s", reason)
        fallback = run.sort_values(["qid", "rank"], kind="stable")[RUN_COLUMNS].reset_index(drop=True)
        return fallback.assign(first_stage_rank=fallback["rank"], degraded=True, degraded_reason=reason)


def bi_encoder_scorer(qids: Sequence[str], query_vectors: np.ndarray, chunk_ids: Sequence[str],
                      chunk_vectors: np.ndarray) -> PairScorer:
    """Cosine of precomputed, normalized query and chunk vectors: no model call at rerank time."""
    query_row = pd.Index(qids)
    chunk_row = pd.Index(chunk_ids)

    def score(pairs: pd.DataFrame) -> np.ndarray:
        rows = chunk_row.get_indexer(pairs["chunk_id"])
        if (rows < 0).any():  # -1 would silently take the last chunk's vector
            unknown = pairs["chunk_id"].to_numpy()[rows < 0]
            raise ValueError(f"{len(unknown)} results name no chunk of the corpus (e.g. {unknown[0]!r}): a run of "
                             "document ids is reranked only if its ids are the chunker's chunk ids")
        q = query_vectors[query_row.get_indexer(pairs["qid"])]
        return np.einsum("ij,ij->i", q, chunk_vectors[rows])

    return score


def cross_encoder_scorer(model: str, questions: dict[str, str], passages: dict[str, str],
                         batch_size: int = 32, revision: str | None = None) -> PairScorer:
    """A sentence-transformers CrossEncoder (local path, packaged name or cached hub id at revision) scoring
    (question, passage) pairs. A model whose head is not in its weights raises ValueError (the run is then degraded
    and says why; the start checks refuse most such models already; `rerank` refuses one whose scores are all equal)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import CrossEncoder

    from rankbench.retrieval.encoders.base import resolve_model_path
    from rankbench.retrieval.model_files import model_folder_problem, uninitialised_parameters
    from rankbench.retrieval.scorer_kinds import CROSS_ENCODER

    folder = resolve_model_path(model, revision)
    problem = model_folder_problem(folder, CROSS_ENCODER)
    if problem:
        raise ValueError(f"cross-encoder {model!r} {problem}")
    encoder = CrossEncoder(folder, device="cpu")
    random = uninitialised_parameters(encoder.model, folder)
    if random:
        raise ValueError(f"cross-encoder {model!r} lacks {', '.join(random)} in its weights: they were initialised "
                         "at random, so its scores would be noise (is it a bi-encoder?)")

    def score(pairs: pd.DataFrame) -> np.ndarray:
        texts = [(questions[q], passages[c]) for q, c in zip(pairs["qid"], pairs["chunk_id"])]
        if not texts:
            return np.zeros(0)
        return np.asarray(encoder.predict(texts, batch_size=batch_size, show_progress_bar=False), dtype=np.float64)

    return score
