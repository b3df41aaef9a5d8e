"""The numba backend of rankbench.retrieval.bm25's search: the numpy backend's arithmetic and order, compiled.

Same results bit for bit: each document's score is summed in float64 in the same order (query terms in order,
each term's postings), the bm25l/bm25+ baseline is added last, and the top k is the unique one under (score
desc, position asc), so the selection method cannot change it. The kernels are compiled with cache=True: numba
keeps them in NUMBA_CACHE_DIR (the workflow sets it to results/<dataset>/cache/numba), so only the first process
pays the compile. Imported only when the numba backend is chosen (importing numba costs a second).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _worse(score_a: float, pos_a: int, score_b: float, pos_b: int) -> bool:
    """Whether (score_a, pos_a) ranks below (score_b, pos_b): lower score, or equal score and later position."""
    return score_a < score_b or (score_a == score_b and pos_a > pos_b)


@njit(cache=True, nogil=True)
def _sift_down(heap_scores: np.ndarray, heap_docs: np.ndarray, size: int) -> None:
    """Restore the min-heap (worst entry at the root) after its root was replaced."""
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        right = child + 1
        if right < size and _worse(heap_scores[right], heap_docs[right], heap_scores[child], heap_docs[child]):
            child = right
        if not _worse(heap_scores[child], heap_docs[child], heap_scores[pos], heap_docs[pos]):
            return
        heap_scores[pos], heap_scores[child] = heap_scores[child], heap_scores[pos]
        heap_docs[pos], heap_docs[child] = heap_docs[child], heap_docs[pos]
        pos = child


@njit(cache=True, nogil=True)
def _sift_up(heap_scores: np.ndarray, heap_docs: np.ndarray, pos: int) -> None:
    """Restore the min-heap after an entry was appended at pos."""
    while pos > 0:
        parent = (pos - 1) // 2
        if not _worse(heap_scores[pos], heap_docs[pos], heap_scores[parent], heap_docs[parent]):
            return
        heap_scores[pos], heap_scores[parent] = heap_scores[parent], heap_scores[pos]
        heap_docs[pos], heap_docs[parent] = heap_docs[parent], heap_docs[pos]
        pos = parent


@njit(cache=True, nogil=True)
def _search_all(data, indices, indptr, n_docs, query_ptr, term_ids, weights, baselines, masks, groups,
                positions, scores):
    """Fill positions/scores ([n_queries, k], pre-filled with -1 / 0.0) with each query's top k matches."""
    width = positions.shape[1]
    totals = np.zeros(n_docs, dtype=np.float64)
    matched = np.zeros(n_docs, dtype=np.bool_)
    touched = np.empty(n_docs, dtype=np.int64)
    heap_scores = np.empty(width, dtype=np.float64)
    heap_docs = np.empty(width, dtype=np.int64)
    for row in range(len(query_ptr) - 1):
        first, last = query_ptr[row], query_ptr[row + 1]
        if first == last:
            continue
        n_postings = 0
        for q in range(first, last):
            n_postings += indptr[term_ids[q] + 1] - indptr[term_ids[q]]
        # Many postings: scan every document in order afterwards; few: list the matched ones as they come.
        dense = n_postings * 8 > n_docs
        n_touched = 0
        for q in range(first, last):
            term, weight = term_ids[q], weights[q]
            for j in range(indptr[term], indptr[term + 1]):
                doc = indices[j]
                if not dense and not matched[doc]:
                    touched[n_touched] = doc
                    n_touched += 1
                matched[doc] = True
                totals[doc] += np.float64(data[j]) * weight
        size = 0
        mask = masks[groups[row]]
        for t in range(n_docs if dense else n_touched):
            doc = t if dense else touched[t]
            if not matched[doc]:
                continue
            score = totals[doc] + baselines[row] if len(baselines) else totals[doc]
            totals[doc] = 0.0
            matched[doc] = False
            if masks.shape[1] > 0 and not mask[doc]:
                continue
            if size < width:
                heap_scores[size], heap_docs[size] = score, doc
                _sift_up(heap_scores, heap_docs, size)
                size += 1
            elif _worse(heap_scores[0], heap_docs[0], score, doc):
                heap_scores[0], heap_docs[0] = score, doc
                _sift_down(heap_scores, heap_docs, size)
        # Pop the worst first: the heap empties from the back of the row to the front.
        for slot in range(size - 1, -1, -1):
            positions[row, slot], scores[row, slot] = heap_docs[0], heap_scores[0]
            size -= 1
            heap_scores[0], heap_docs[0] = heap_scores[size], heap_docs[size]
            _sift_down(heap_scores, heap_docs, size)


def search_all(scores: dict, query_ptr: np.ndarray, term_ids: np.ndarray, weights: np.ndarray,
               baselines: np.ndarray, masks: np.ndarray, groups: np.ndarray, width: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Top-width positions and scores of every query (flattened term ids/weights with query_ptr bounds).

    masks is [n_groups, n_docs] (or [1, 0]: every document allowed); groups gives each query's mask row;
    baselines the bm25l/bm25+ per-query baseline (empty for the other variants).
    """
    n_queries = len(query_ptr) - 1
    positions = np.full((n_queries, width), -1, dtype=np.int64)
    out_scores = np.zeros((n_queries, width), dtype=np.float64)
    _search_all(np.asarray(scores["data"]), np.asarray(scores["indices"]), np.asarray(scores["indptr"]),
                int(scores["num_docs"]), query_ptr, term_ids, weights, baselines, masks, groups, positions, out_scores)
    return positions, out_scores
