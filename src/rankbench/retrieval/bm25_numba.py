"""The numba backend of rankbench.retrieval.bm25's search: the numpy backend's results, bit for bit, found faster.

Every score returned is summed as the numpy backend sums it (float64, query terms in query order, from 0.0, the
bm25l/bm25+ baseline last), and the top k is the unique one under (score desc, position asc). What differs is
which documents get scored. Per query: each term's upper bound (its largest posting times its weight); terms that
add 0 to every score (every posting 0: robertson's IDF 0) left out when no weight is negative, their first matches
filling the list only if fewer than k documents score above 0; a floor,
the k-th best partial score among the strongest terms' first postings; then either MaxScore, document at a time,
which never visits documents that only weak terms match once the k-th score is above what those terms can add,
or, when the terms that can still reach the floor hold most postings, the plain sum of every posting. Pruning
decisions carry a rounding margin, so no document that could enter is skipped (tests compare with numpy on tied
and IDF-0 corpora; benchmarks/bench_bm25.py on 100k passages). The kernels are compiled with cache=True: numba
keeps them in NUMBA_CACHE_DIR (the workflow sets it to results/<dataset>/cache/numba), so only the first process
pays the compile. Imported only when the numba backend is chosen (importing numba costs a second).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# MaxScore visits a document for ~10x the cost of adding one posting: above 1/EXHAUSTIVE_RATIO of the postings
# left to visit, a query adds up all of them instead. Both constants only choose how much work is skipped (every
# choice gives the same results); measured on benchmarks/bench_bm25.py's 100k passages (README, "BM25").
EXHAUSTIVE_RATIO = 12
# The floor is taken over FLOOR_DOCUMENTS x k documents: enough for a floor near the final k-th score, few enough
# that it costs a small part of the query (at 16 x k it took ~15% of the search time).
FLOOR_DOCUMENTS = 4


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
def _push(heap_scores: np.ndarray, heap_docs: np.ndarray, size: int, score: float, doc: int) -> int:
    """Offer (score, doc) to the min-heap of the best len(heap_scores); return the new size."""
    if size < len(heap_scores):
        heap_scores[size], heap_docs[size] = score, doc
        _sift_up(heap_scores, heap_docs, size)
        return size + 1
    if _worse(heap_scores[0], heap_docs[0], score, doc):
        heap_scores[0], heap_docs[0] = score, doc
        _sift_down(heap_scores, heap_docs, size)
    return size


@njit(cache=True, nogil=True)
def _seek(indices: np.ndarray, at: int, end: int, doc: int) -> int:
    """First posting at or after `at` whose document is >= doc (postings are sorted by document): galloping, then
    binary search, so skipping far ahead in a long list costs a logarithm, not a scan."""
    step = 1
    low = at
    while at < end and indices[at] < doc:
        low = at + 1
        at += step
        step *= 2
    high = min(at, end)
    while low < high:
        middle = (low + high) // 2
        if indices[middle] < doc:
            low = middle + 1
        else:
            high = middle
    return low


@njit(cache=True, nogil=True)
def _largest_posting(data: np.ndarray, first: int, last: int) -> float:
    """A term's largest posting (0 for none): times the term's weight, the most it can add to a score."""
    best = 0.0
    for j in range(first, last):
        best = max(best, np.float64(data[j]))
    return best


@njit(cache=True, nogil=True)
def _score_floor(data, indices, start, end, n, weights, order, width, mask, sums, candidates) -> float:
    """A score the k-th best is sure to reach: the k-th best among up to FLOOR_DOCUMENTS x k real documents (the
    postings of the strongest terms first) of their score over those postings alone, a lower bound of the full score
    when no weight is negative (else -inf). Priming the threshold with it lets the search skip weak terms from its first
    document on, instead of after the first k documents. sums (-0.0 per document: not seen yet) is scratch space,
    left as found."""
    for i in range(n):
        if weights[order[i]] < 0:
            return -np.inf
    count, budget = 0, min(len(candidates), FLOOR_DOCUMENTS * width)
    for i in range(n - 1, -1, -1):
        weight = weights[order[i]]
        for j in range(start[i], min(end[i], start[i] + budget - count)):
            doc = indices[j]
            if sums[doc] == 0.0 and np.signbit(sums[doc]):
                candidates[count] = doc
                count += 1
            sums[doc] += np.float64(data[j]) * weight + 0.0  # -0.0 + (x + 0.0) is never -0.0: seen
        if count == budget:
            break
    partial = np.empty(count)
    for c in range(count):
        doc = candidates[c]
        partial[c] = sums[doc] if len(mask) == 0 or mask[doc] else -np.inf
        sums[doc] = -0.0
    if count < width:
        return -np.inf
    return np.partition(partial, count - width)[count - width]


@njit(cache=True, nogil=True)
def _exhaustive(data, indices, n_docs, start, end, order, n, n_slots, weights, baseline, with_baseline, mask, floor,
                totals, matched, touched, heap_scores, heap_docs) -> int:
    """Every posting of every list added up, list by list in query order; the heap gets the documents at or above
    the floor. For queries whose strong terms are common: one pass over their postings beats visiting each document.
    totals (-0.0 per document: "no posting yet", as +0.0 + x == -0.0 + (x + 0.0) bit for bit), matched (False per
    document) and touched are scratch space, left as found. Returns the heap size."""
    n_postings = 0
    for i in range(n):
        n_postings += end[i] - start[i]
    # Many postings: scan every document afterwards; few: list the matched ones as they come.
    dense = n_postings * 8 > n_docs
    n_touched = 0
    for slot in range(n_slots):
        i = 0
        while i < n and order[i] != slot:
            i += 1
        if i == n:  # a term left out: it adds 0 to every document
            continue
        weight = weights[slot]
        if dense:
            for j in range(start[i], end[i]):
                totals[indices[j]] += np.float64(data[j]) * weight + 0.0
        else:
            for j in range(start[i], end[i]):
                doc = indices[j]
                if not matched[doc]:
                    matched[doc] = True
                    touched[n_touched] = doc
                    n_touched += 1
                totals[doc] += np.float64(data[j]) * weight + 0.0
    size, cut = 0, floor
    if dense:
        for doc in range(n_docs):
            # In position order, a document equal to the k-th cannot enter (adding a 0.0 baseline changes nothing).
            if totals[doc] + baseline > cut or (size < len(heap_scores) and totals[doc] + baseline == cut):
                size, cut = _offer(totals[doc], doc, baseline, with_baseline, mask, floor, cut, size, heap_scores,
                                   heap_docs)
        totals[:] = -0.0
        return size
    for t in range(n_touched):
        doc = touched[t]
        size, cut = _offer(totals[doc], doc, baseline, with_baseline, mask, floor, cut, size, heap_scores, heap_docs)
        totals[doc] = -0.0
        matched[doc] = False
    return size


@njit(cache=True, nogil=True)
def _offer(total, doc, baseline, with_baseline, mask, floor, cut, size, heap_scores, heap_docs):
    """Offer a summed document (not if it has no posting: total -0.0) to the heap when it reaches the cut; return
    the new size and cut."""
    score = total + baseline if with_baseline else total
    if score >= cut and not (total == 0.0 and np.signbit(total)) and (len(mask) == 0 or mask[doc]):
        size = _push(heap_scores, heap_docs, size, score, doc)
        if size == len(heap_scores):
            cut = max(floor, heap_scores[0])
    return size, cut


@njit(cache=True, nogil=True)
def _take(data, cursor, i, order, weights, contribution, present) -> float:
    """Record the posting under list i's cursor as its term's contribution to the current document, move past it,
    and return it."""
    slot = order[i]
    contribution[slot] = np.float64(data[cursor[i]]) * weights[slot]
    present[slot] = True
    cursor[i] += 1
    return contribution[slot]


@njit(cache=True, nogil=True)
def _maxscore(data, indices, n_docs, cursor, end, order, bounds, reach, n, n_slots, weights, baseline, with_baseline,
              mask, floor, margin, contribution, present, heap_scores, heap_docs) -> int:
    """MaxScore (Turtle and Flood 1995), document at a time over postings sorted by document: once the k-th best
    score (or the floor) is above what the weakest terms can add together, documents found only in those terms are
    never visited, and a visited document stops being looked up when it cannot reach the k-th score. A document that
    may enter is scored as the numpy backend scores it. contribution/present are per-slot scratch. Returns the heap
    size."""
    width = len(heap_scores)
    size, threshold, essential = 0, -np.inf, 0
    while essential < n and reach[essential] + baseline + margin < floor:
        essential += 1
    while True:
        if essential == n - 1:
            # One list left to visit: skip its postings that cannot reach the cut without visiting them.
            last, weight = n - 1, weights[order[n - 1]]
            rest = baseline + (reach[n - 2] if n > 1 else 0.0) + margin
            while cursor[last] < end[last]:
                ceiling = np.float64(data[cursor[last]]) * weight + rest
                if ceiling > threshold and ceiling >= floor:
                    break
                cursor[last] += 1
        doc = n_docs
        for i in range(essential, n):
            if cursor[i] < end[i] and indices[cursor[i]] < doc:
                doc = indices[cursor[i]]
        if doc == n_docs:
            return size
        partial = 0.0
        for i in range(essential, n):
            if cursor[i] < end[i] and indices[cursor[i]] == doc:
                partial += _take(data, cursor, i, order, weights, contribution, present)
        # Documents come in position order, so a newcomer enters only above the k-th score, never on a tie.
        ceiling = partial + baseline + (reach[essential - 1] if essential else 0.0)
        may_enter = len(mask) == 0 or mask[doc]
        i = essential - 1
        while may_enter and i >= 0:
            if ceiling + margin <= threshold or ceiling + margin < floor:
                may_enter = False
                break
            cursor[i] = _seek(indices, cursor[i], end[i], doc)
            ceiling -= bounds[i]
            if cursor[i] < end[i] and indices[cursor[i]] == doc:
                ceiling += _take(data, cursor, i, order, weights, contribution, present)
            i -= 1
        score = 0.0
        for slot in range(n_slots):  # the numpy backend's sum: query order, from 0.0, then the baseline
            if present[slot]:
                score += contribution[slot]
                present[slot] = False
        if may_enter and ceiling + margin > threshold and ceiling + margin >= floor:
            size = _push(heap_scores, heap_docs, size, score + baseline if with_baseline else score, doc)
            if size == width:
                threshold = heap_scores[0]
                while essential < n and (reach[essential] + baseline + margin <= threshold
                                         or reach[essential] + baseline + margin < floor):
                    essential += 1


@njit(cache=True, nogil=True)
def _search_lists(data, indices, n_docs, cursor, end, order, bounds, reach, n, n_slots, weights, baseline,
                  with_baseline, mask, margin, totals, sums, matched, touched, candidates, contribution, present,
                  heap_scores, heap_docs) -> int:
    """The heap filled with the top k of the documents in n lists (sorted by upper bound; reach their running sums):
    a floor from the strongest lists' documents, then MaxScore when the lists that can still reach the floor have
    few postings, else the exhaustive sum. Returns the heap size."""
    floor = _score_floor(data, indices, cursor, end, n, weights, order, len(heap_scores), mask, sums,
                         candidates) + baseline - margin
    essential_postings, all_postings = 0, 0
    for i in range(n):
        all_postings += end[i] - cursor[i]
        if reach[i] + baseline + margin >= floor:
            essential_postings += end[i] - cursor[i]
    if essential_postings * EXHAUSTIVE_RATIO > all_postings:
        return _exhaustive(data, indices, n_docs, cursor, end, order, n, n_slots, weights, baseline, with_baseline,
                           mask, floor, totals, matched, touched, heap_scores, heap_docs)
    return _maxscore(data, indices, n_docs, cursor, end, order, bounds, reach, n, n_slots, weights, baseline,
                     with_baseline, mask, floor, margin, contribution, present, heap_scores, heap_docs)


@njit(cache=True, nogil=True)
def _empty_heap_into(positions, scores, size, heap_scores, heap_docs) -> None:
    """Write the heap's entries into a query's row, best first (popping the worst first fills it from the back)."""
    for slot in range(size - 1, -1, -1):
        positions[slot], scores[slot] = heap_docs[0], heap_scores[0]
        size -= 1
        heap_scores[0], heap_docs[0] = heap_scores[size], heap_docs[size]
        _sift_down(heap_scores, heap_docs, size)


@njit(cache=True, nogil=True)
def _fill_with_zero_scores(indices, n_docs, cursor, end, n, mask, zero_score, positions, scores, matched) -> None:
    """Complete a row whose documents above zero_score are all in it with the documents that score zero_score, in
    position order: every unlisted match of the query's n lists (merged by document) that the row does not hold above
    zero_score, until the row is full. matched (False per document) is scratch space, left as found."""
    width, above = len(positions), 0
    while above < width and positions[above] >= 0 and scores[above] > zero_score:
        matched[positions[above]] = True
        above += 1
    filled = above
    while filled < width:
        doc = n_docs
        for i in range(n):
            if cursor[i] < end[i] and indices[cursor[i]] < doc:
                doc = indices[cursor[i]]
        if doc == n_docs:
            break
        for i in range(n):
            if cursor[i] < end[i] and indices[cursor[i]] == doc:
                cursor[i] += 1
        if not matched[doc] and (len(mask) == 0 or mask[doc]):
            positions[filled], scores[filled] = doc, zero_score
            filled += 1
    positions[filled:] = -1
    scores[filled:] = 0.0
    for c in range(above):
        matched[positions[c]] = False


@njit(cache=True, nogil=True)
def _search_all(data, indices, indptr, n_docs, query_ptr, term_ids, weights, baselines, masks, groups,
                positions, scores):
    """Fill positions/scores ([n_queries, k], pre-filled with -1 / 0.0) with each query's top k matches.

    Per query: its terms sorted by upper bound, then the search of their lists (_search_lists). Terms whose every
    posting is 0 (IDF 0: in most documents) add 0 to every score, so when no weight is negative they are left out of
    that search, and only if fewer than k documents score above 0 do their first matches fill the rest, in position
    order, without a pass over their long lists. Exact throughout: bounds carry a margin for rounding, and the
    scores kept are summed as the numpy backend sums them (adding 0 changes no sum that starts from 0.0).
    """
    width = positions.shape[1]
    longest = 0
    for row in range(len(query_ptr) - 1):
        longest = max(longest, query_ptr[row + 1] - query_ptr[row])
    term_bounds = np.full(len(indptr) - 1, np.nan)  # per term, for weight 1; filled as terms are met
    order = np.empty(longest, dtype=np.int64)       # query slots by upper bound, ascending
    bounds = np.empty(longest)                       # upper bound of each slot, in that order
    reach = np.empty(longest)                        # reach[i]: bounds[0] + ... + bounds[i]
    cursor = np.empty(longest, dtype=np.int64)
    end = np.empty(longest, dtype=np.int64)
    contribution = np.zeros(longest)                 # per query slot, in query order
    present = np.zeros(longest, dtype=np.bool_)
    heap_scores = np.empty(width, dtype=np.float64)
    heap_docs = np.empty(width, dtype=np.int64)
    totals = np.full(n_docs, -0.0)
    sums = np.full(n_docs, -0.0)
    matched = np.zeros(n_docs, dtype=np.bool_)
    touched = np.empty(n_docs, dtype=np.int64)
    candidates = np.empty(min(n_docs, FLOOR_DOCUMENTS * width), dtype=np.int64)
    for row in range(len(query_ptr) - 1):
        first, n = query_ptr[row], query_ptr[row + 1] - query_ptr[row]
        if n == 0:
            continue
        query_weights = weights[first:first + n]
        baseline = baselines[row] if len(baselines) else 0.0
        magnitude = abs(baseline)
        negative = False
        for slot in range(n):
            term, weight = term_ids[first + slot], query_weights[slot]
            if np.isnan(term_bounds[term]):
                term_bounds[term] = _largest_posting(data, indptr[term], indptr[term + 1])
            # Postings are >= 0 (search_all checks): a term adds at most weight x its largest, or nothing.
            bound = max(weight * term_bounds[term], 0.0)
            magnitude += abs(weight) * term_bounds[term]
            negative = negative or weight * term_bounds[term] < 0
            place = slot  # insertion sort: a handful of terms
            while place > 0 and bounds[place - 1] > bound:
                bounds[place], order[place] = bounds[place - 1], order[place - 1]
                place -= 1
            bounds[place], order[place] = bound, slot
        total = 0.0
        for i in range(n):
            total += bounds[i]
            reach[i] = total
            cursor[i], end[i] = indptr[term_ids[first + order[i]]], indptr[term_ids[first + order[i]] + 1]
        # Rounding margin: sums of the same terms in another order differ by far less than this.
        margin = 1e-9 * (magnitude + total)
        mask = masks[groups[row]]
        with_baseline = len(baselines) > 0
        # With no negative weight, the terms that add 0 to every score are the first ones by upper bound.
        zero_terms = 0
        while not negative and zero_terms < n and bounds[zero_terms] == 0.0:
            zero_terms += 1
        size = 0
        if zero_terms < n:
            z = zero_terms
            size = _search_lists(data, indices, n_docs, cursor[z:n], end[z:n], order[z:n], bounds[z:n], reach[z:n],
                                 n - z, n, query_weights, baseline, with_baseline, mask, margin, totals, sums,
                                 matched, touched, candidates, contribution, present, heap_scores, heap_docs)
        _empty_heap_into(positions[row], scores[row], size, heap_scores, heap_docs)
        zero_score = 0.0 + baseline if with_baseline else 0.0  # the numpy backend's score of a match adding 0s
        if zero_terms > 0 and (size < width or scores[row, width - 1] <= zero_score):
            for slot in range(n):
                cursor[slot], end[slot] = indptr[term_ids[first + slot]], indptr[term_ids[first + slot] + 1]
            _fill_with_zero_scores(indices, n_docs, cursor, end, n, mask, zero_score, positions[row], scores[row],
                                   matched)


def search_all(scores: dict, query_ptr: np.ndarray, term_ids: np.ndarray, weights: np.ndarray,
               baselines: np.ndarray, masks: np.ndarray, groups: np.ndarray, width: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Top-width positions and scores of every query (flattened term ids/weights with query_ptr bounds).

    masks is [n_groups, n_docs] (or [1, 0]: every document allowed); groups gives each query's mask row;
    baselines the bm25l/bm25+ per-query baseline (empty for the other variants).
    """
    data = np.asarray(scores["data"])
    if data.min(initial=0) < 0:  # the bounds and the floor take every posting's score to be >= 0, as bm25s stores them
        raise ValueError("the BM25 index holds negative scores, which the numba backend cannot prune; use numpy")
    n_queries = len(query_ptr) - 1
    positions = np.full((n_queries, width), -1, dtype=np.int64)
    out_scores = np.zeros((n_queries, width), dtype=np.float64)
    _search_all(data, np.asarray(scores["indices"]), np.asarray(scores["indptr"]),
                int(scores["num_docs"]), query_ptr, term_ids, weights, baselines, masks, groups, positions, out_scores)
    return positions, out_scores
