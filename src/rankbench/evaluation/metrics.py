"""Per-question retrieval metrics, trec_eval-exact, vectorized over all questions with numpy.

Conventions (README.md, "Metrics"): grades are any integers, as in trec_eval (0 and
negative grades are judged non-relevant); a result is relevant when its grade is
>= ``relevance_threshold``; (n)DCG uses every positive grade whatever the threshold (negative
grades gain 0), as trec_eval's ``ndcg_cut`` does; questions without a relevant label are left out (count them
with :func:`questions_without_relevant`); a labelled question missing from the run scores 0
(``trec_eval -c``). A question's results are ordered by its ``rank`` column and the i-th of
them (1-based) is at rank i for every metric, as in trec_eval, which re-sorts and ignores
the rank column (so gaps in ranks are closed up).

How it runs: ids are integer-coded once, the run becomes a ``[question, position]`` matrix
of grades (two codes below any grade: retrieved but unlabelled, nothing retrieved there), the labels become a
``[question, position]`` matrix of ideal gains, and each metric is the formula its row of the metric table carries
(metric_names.py), a column read of a cumulative sum over those matrices (metric_inputs.py). No Python loop runs
per question or per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rankbench.errors import plain_numbers
from rankbench.evaluation.metric_inputs import EMPTY, GRADES, UNJUDGED, MetricInput, gains
from rankbench.evaluation.metric_names import (  # ERR_MAX_GRADE: for callers that import it from here
    ERR_MAX_GRADE,  # noqa: F401
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRICS,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
)
from rankbench.io.qrels import GRADE_BOUND

# The metric names by family and cutoff, what each metric needs prepared and the formula that computes it come from
# the metric table (metric_names.py): no metric name decides anything here. bpref and condensed nDCG read a negative
# grade as not judged, and infAP as pooled but not judged, as trec_eval does.
UNCUT_METRICS = METRICS_FULL + EXTRA_METRICS_FULL
# Labels of grades_by_rank's codes when the grades are 0..3 (see grade_labels): the grades, then
# retrieved-but-unlabelled, then nothing retrieved there.
GRADE_LABELS = ("0", "1", "2", "3", "unjudged", "none")
GAINS = ("linear", "exponential")
EXP_GAIN_MAX = 1023  # 2^grade - 1 is finite in float64 up to here
_RUN_COLUMNS = ("qid", "item_id", "rank", "score")
_QRELS_COLUMNS = ("qid", "item_id", "grade")


# --------------------------------------------------------------------------- validation


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Fail early, naming the missing columns, when a frame lacks a required column."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; expected {list(columns)}")


def _row_name(frame: pd.DataFrame, i: int) -> str:
    """'question <qid>, item <item_id>' of row position i, for error messages."""
    return f"question {frame['qid'].iloc[i]!r}, item {frame['item_id'].iloc[i]!r}"


def _validated_ks(ks: Sequence[int]) -> np.ndarray:
    """Sorted distinct cutoffs as int64; each must be a positive integer (bools rejected)."""
    values = []
    for k in ks:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"cutoff k must be a positive integer, got {k!r}")
        values.append(int(k))
    return np.array(sorted(set(values)), dtype=np.int64)


def _validated_metrics(metrics: Sequence[str] | None) -> tuple[str, ...]:
    """Requested metric names, sorted and checked against the known ones.

    By default every metric but the pollution ones, which need a doc_id column and mean something at chunk grain only.
    """
    known = METRICS_AT_K + METRICS_FULL + POLLUTION_METRICS + EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL
    if metrics is None:
        return tuple(sorted(METRICS_AT_K + METRICS_FULL))
    if isinstance(metrics, str):
        metrics = [metrics]
    unknown = sorted(set(metrics) - set(known))
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {list(known)}")
    return tuple(sorted(set(metrics)))


def _validated_threshold(relevance_threshold: int) -> int:
    """The relevance threshold as an int >= 1 (grade 0 always means judged non-relevant)."""
    ok = isinstance(relevance_threshold, (int, np.integer)) and not isinstance(relevance_threshold, bool)
    if not ok or relevance_threshold < 1:
        raise ValueError(f"relevance_threshold must be an integer >= 1, got {relevance_threshold!r}")
    return int(relevance_threshold)


def _validated_gain(gain: str) -> str:
    if gain not in GAINS:
        raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")
    return gain


def _validated_persistence(rbp_p: float) -> float:
    """RBP's persistence p, a number strictly between 0 and 1."""
    ok = isinstance(rbp_p, (int, float, np.floating)) and not isinstance(rbp_p, bool) and 0 < rbp_p < 1
    if not ok:
        raise ValueError(f"rbp_p (RBP's persistence) must be a number strictly between 0 and 1, got {rbp_p!r}")
    return float(rbp_p)


def _ids(frame: pd.DataFrame, column: str, what: str) -> pd.Series:
    """An id column as strings (ids of other types are converted); missing ids raise."""
    ids = frame[column]
    missing = ids.isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(f"{what} has a missing {column} at row {i} ({_row_name(frame, i)})")
    if isinstance(ids.dtype, pd.CategoricalDtype):  # dictionary-coded: its codes are used as they are
        categories = ids.cat.categories
        return ids if pd.api.types.is_string_dtype(categories) else ids.cat.rename_categories(categories.astype(str))
    return ids if pd.api.types.is_string_dtype(ids) else ids.astype(str)


def _integers(frame: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """A column as int64, or a ValueError naming the first row (qid, item_id) that is not an integer."""
    values = frame[column].to_numpy()
    if values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    numeric = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(numeric) | (numeric != np.round(numeric)) | (values.dtype.kind == "b")
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(plain_numbers(f"{what} {column} must be an integer: {_row_name(frame, i)} has {values[i]!r}"))
    return numeric.astype(np.int64)


def _checked_grades(qrels: pd.DataFrame) -> np.ndarray:
    """Grades as int64: any integers (as trec_eval takes them) that the grade matrix can hold."""
    _require_columns(qrels, _QRELS_COLUMNS, "qrels")
    grade = _integers(qrels, "grade", "qrels")
    bad = np.abs(grade) > GRADE_BOUND
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"qrels grade must be in -{GRADE_BOUND}..{GRADE_BOUND}: {_row_name(qrels, i)} has {grade[i]}")
    return grade


def _checked_ranks(run: pd.DataFrame) -> np.ndarray:
    """Run ranks as int64 (integers >= 1), after checking that no score is NaN."""
    _require_columns(run, _RUN_COLUMNS, "run")
    score = pd.to_numeric(run["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    nan = np.isnan(score)
    if nan.any():
        raise ValueError(f"run score is NaN or not numeric: {_row_name(run, int(np.flatnonzero(nan)[0]))}")
    rank = _integers(run, "rank", "run")
    if len(rank) and rank.min() < 1:
        i = int(np.argmin(rank))
        raise ValueError(f"run rank must be >= 1: {_row_name(run, i)} has rank {rank[i]}")
    return rank


# --------------------------------------------------------------------------- coding


def _shared_codes(first: pd.Series, second: pd.Series) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    """Integer codes of two id columns over one shared vocabulary (codes of `first` come first).

    Dictionary-coded (categorical) columns keep their codes: only their distinct values are hashed, to map the
    second vocabulary onto the first. String columns are hashed once together, repeats of a value on consecutive
    rows (a run's question ids) once per stretch.
    """
    if isinstance(first.dtype, pd.CategoricalDtype) or isinstance(second.dtype, pd.CategoricalDtype):
        first_codes, first_vocab = _codes(first)
        second_codes, second_vocab = _codes(second)
        if first_vocab is second_vocab:
            return first_codes, second_codes, first_vocab
        # The second (labels') vocabulary is hashed, the first probed; Arrow does both natively.
        found = pc.index_in(pa.array(first_vocab), value_set=pa.array(second_vocab)).to_numpy(zero_copy_only=False)
        found = np.nan_to_num(found, nan=-1).astype(np.int64)
        shared = np.full(len(second_vocab), -1, dtype=np.int64)
        shared[found[found >= 0]] = np.flatnonzero(found >= 0)
        new = shared < 0
        shared[new] = len(first_vocab) + np.arange(int(new.sum()))
        vocab = first_vocab.append(second_vocab[new]) if new.any() else first_vocab
        return first_codes, shared[second_codes], vocab
    starts = _stretch_starts(first)
    if starts is None:
        codes, uniques = pd.factorize(pd.concat([first, second], ignore_index=True))
        return codes[: len(first)].astype(np.int64), codes[len(first):].astype(np.int64), pd.Index(uniques)
    codes, uniques = pd.factorize(pd.concat([first.iloc[starts], second], ignore_index=True))
    lengths = np.diff(np.append(starts, len(first)))
    return (np.repeat(codes[: len(starts)].astype(np.int64), lengths), codes[len(starts):].astype(np.int64),
            pd.Index(uniques))


def _codes(ids: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and vocabulary of one id column: a categorical's own codes, else hashed."""
    if isinstance(ids.dtype, pd.CategoricalDtype):
        return ids.cat.codes.to_numpy().astype(np.int64), ids.cat.categories
    codes, uniques = pd.factorize(ids)
    return codes.astype(np.int64), pd.Index(uniques)


def _stretch_starts(ids: pd.Series) -> np.ndarray | None:
    """Rows where an Arrow-backed string column changes value, when it repeats values on consecutive rows
    (fewer than half the rows start a stretch); else None."""
    if len(ids) < 2 or not isinstance(ids.array, pd.arrays.ArrowStringArray):
        return None
    values = pa.chunked_array(pa.array(ids.array))
    changed = pc.not_equal(values[1:], values[:-1]).to_numpy(zero_copy_only=False)
    starts = np.concatenate([[0], np.flatnonzero(changed) + 1])
    return starts if len(starts) <= len(ids) // 2 else None


def _arrow_strings(ids: pd.Series) -> pa.Array | None:
    """The Arrow string array behind a pandas string column, None when it has none (object or categorical ids)."""
    if not isinstance(ids.array, pd.arrays.ArrowStringArray):
        return None
    array = pa.array(ids.array)
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _matched_labels(run_q: np.ndarray, run_ids: pd.Series, label_q: np.ndarray, label_ids: pd.Series,
                    run_fingerprints: np.ndarray) -> np.ndarray | None:
    """Label (index into label_q) of each run row, -1 when none: (question, fingerprint) keys of the labels hashed,
    the run's probed, and every match confirmed on the question codes and the id strings, so that only a
    fingerprint collision (None: the caller codes the ids instead) could go unconfirmed."""
    label_fingerprints = _fingerprints(label_ids)
    if label_fingerprints is None:
        return None
    with np.errstate(over="ignore"):
        label_keys = label_fingerprints + label_q * np.int64(-0x61C8864680B583EB)
        run_keys = run_fingerprints + run_q * np.int64(-0x61C8864680B583EB)
    index = pd.Index(label_keys)
    if not index.is_unique:
        return None
    buckets = np.int64(_bucket_count(len(label_keys)) - 1)  # a fingerprint's low bits: its bucket
    found = _probed(index, run_keys, label_fingerprints & buckets, run_fingerprints & buckets, int(buckets) + 1)
    run_rows = np.flatnonzero(found >= 0)
    label_rows = found[run_rows]
    same = pc.equal(pc.take(_arrow_strings(run_ids), pa.array(run_rows)),
                    pc.take(_arrow_strings(label_ids), pa.array(label_rows)))
    if not (np.array_equal(run_q[run_rows], label_q[label_rows]) and pc.all(same).as_py() in (True, None)):
        return None
    return found


def _probed(label_keys: pd.Index, run_keys: np.ndarray, label_buckets: np.ndarray, run_buckets: np.ndarray,
            n_buckets: int) -> np.ndarray:
    """Position of each run key among the (unique) label keys, -1 when absent. Only the rows whose item falls in a
    bucket some label's item fills (items: their codes; fingerprints: their low bits) are probed in the hash: most
    results of a run are unlabelled, and a bucket array is read far faster than a hash is probed."""
    labelled = np.zeros(n_buckets, dtype=bool)
    labelled[label_buckets] = True
    candidates = np.flatnonzero(labelled[run_buckets])
    found = np.full(len(run_keys), -1, dtype=np.int64)
    found[candidates] = label_keys.get_indexer(run_keys[candidates])
    return found


def _bucket_count(n_labels: int) -> int:
    """Buckets for the labels' fingerprints: a power of two with at most one label in eight buckets (few false
    candidates), between 2^10 and 2^26."""
    return 1 << int(np.clip(np.ceil(np.log2(max(8 * n_labels, 1))), 10, 26))


_WORD_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_FINGERPRINT_MAX_BYTES = 64  # longer ids are hashed by pandas instead


def _fingerprints(ids: pd.Series) -> np.ndarray | None:
    """A 64-bit fingerprint of every id of an Arrow string column, read from its buffers eight bytes at a time (equal
    ids, equal fingerprints; different ids collide with probability ~2^-64, so a repeat found is checked on the
    strings). None without an Arrow array or for ids over _FINGERPRINT_MAX_BYTES."""
    array = _arrow_strings(ids)
    if array is None or len(array) == 0:
        return None
    _, offset_buffer, data_buffer = array.buffers()
    offset_type = np.int64 if pa.types.is_large_string(array.type) else np.int32
    offsets = np.frombuffer(offset_buffer, dtype=offset_type)[array.offset: array.offset + len(array) + 1]
    starts, lengths = offsets[:-1].astype(np.int64), np.diff(offsets).astype(np.int64)
    longest = int(lengths.max())
    if longest > _FINGERPRINT_MAX_BYTES:
        return None
    data = np.zeros(int(offsets[-1]) + 8, dtype=np.uint8)  # padded: the last id's word reads past its end
    data[: int(offsets[-1]) - int(offsets[0])] = np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0]: offsets[-1]]
    starts -= int(offsets[0])
    words = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))  # a word at every byte
    fingerprint = lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        for word in range(0, max(longest, 1), 8):  # only the id's own words: the same fingerprint in any column
            bits = words[np.minimum(starts + word, len(words) - 1)] & _WORD_MASKS[np.clip(lengths - word, 0, 8)]
            mixed = (fingerprint ^ bits) * np.uint64(0xFF51AFD7ED558CCD)
            mixed ^= mixed >> np.uint64(33)
            fingerprint = mixed if word == 0 else np.where(lengths > word, mixed, fingerprint)
    return fingerprint.view(np.int64)


def _pair_keys(first: np.ndarray, second: np.ndarray, n_second: int) -> np.ndarray:
    """One int64 key per (first code, second code) pair, for duplicate checks and lookups."""
    return first * np.int64(max(n_second, 1)) + second


def _deduplicated_labels(qrels: pd.DataFrame, keys: np.ndarray, grade: np.ndarray) -> np.ndarray:
    """Mask keeping one row per (qid, item_id); conflicting grades for a pair raise."""
    order = np.argsort(keys, kind="stable")
    repeat = keys[order[1:]] == keys[order[:-1]]
    keep = np.ones(len(keys), dtype=bool)
    if repeat.any():
        conflict = repeat & (grade[order[1:]] != grade[order[:-1]])
        if conflict.any():
            j = int(order[np.flatnonzero(conflict)[0]])
            found = sorted(set(grade[keys == keys[j]].tolist()))
            raise ValueError(f"conflicting grades in qrels for {_row_name(qrels, j)}: {found}")
        keep[order[1:][repeat]] = False
    return keep


def _check_items_once(run: pd.DataFrame, rows_q: np.ndarray, rows: np.ndarray | None, run_i: np.ndarray,
                      pos: np.ndarray, counts: np.ndarray, exact: bool = True) -> None:
    """Raise when a question lists the same item twice. Rows in (question, rank) order (rows: their run rows, None
    when in place) go into a [question, position] matrix of item codes padded with distinct negatives, and each
    matrix row is sorted: a repeat sits next to itself. run_i not exact: the ids' fingerprints, whose repeats are
    confirmed on codes. A hash of the (question, item) keys when the matrix would be much larger than the run (a few
    very long questions)."""
    width = int(counts.max(initial=0))
    if not exact:
        if len(counts) * width <= 2 * len(rows_q) + 1024 and _first_repeat(rows_q, rows, run_i, pos, counts) is None:
            return
        run_i = _codes(_ids(run, "item_id", "run"))[0]
    if len(counts) * width <= 2 * len(rows_q) + 1024:
        repeat = _first_repeat(rows_q, rows, run_i, pos, counts)
        if repeat is not None:
            raise ValueError(f"run lists the same item twice: {_row_name(run, repeat)}")
        return
    index = pd.Index(_pair_keys(rows_q, run_i if rows is None else run_i[rows], int(run_i.max()) + 1))
    if not index.is_unique:
        i = int(np.flatnonzero(index.duplicated())[0])
        raise ValueError(f"run lists the same item twice: {_row_name(run, i if rows is None else int(rows[i]))}")


def _first_repeat(rows_q: np.ndarray, rows: np.ndarray | None, run_i: np.ndarray, pos: np.ndarray,
                  counts: np.ndarray) -> int | None:
    """Run row of the first item a question lists twice (by the [question, position] matrix sort), or None."""
    items = run_i if rows is None else run_i[rows]
    width = int(counts.max(initial=0))
    matrix = np.broadcast_to(np.iinfo(np.int64).min + np.arange(width, dtype=np.int64), (len(counts), width)).copy()
    matrix[rows_q, pos] = items
    matrix.sort(axis=1)
    repeats = np.flatnonzero((matrix[:, 1:] == matrix[:, :-1]).any(axis=1))
    if len(repeats) == 0:
        return None
    question = int(repeats[0])
    listed = matrix[question]
    item = int(listed[1:][listed[1:] == listed[:-1]][0])
    i = int(np.flatnonzero((rows_q == question) & (items == item))[0])
    return i if rows is None else int(rows[i])


def _rank_order(run: pd.DataFrame, run_q: np.ndarray, rank: np.ndarray) -> np.ndarray | None:
    """Row order by (question, rank), None when rows are already in it; duplicate ranks raise."""
    keys = _pair_keys(run_q, rank, int(rank.max(initial=0)) + 1)
    if bool(np.all(keys[1:] > keys[:-1])):
        return None  # grouped by question in rank order: the usual case, no sort needed
    order = np.argsort(keys, kind="stable")
    same = keys[order[1:]] == keys[order[:-1]]
    if same.any():
        i = int(order[np.flatnonzero(same)[0] + 1])
        raise ValueError(f"run has rank {rank[i]} twice: {_row_name(run, i)}")
    return order


def _group_positions(sorted_groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """0-based position of each row inside its group (rows sorted by group) and the group sizes."""
    counts = np.bincount(sorted_groups, minlength=n_groups)
    starts = np.cumsum(counts) - counts
    return np.arange(len(sorted_groups), dtype=np.int64) - np.repeat(starts, counts), counts


# --------------------------------------------------------------------------- matrices


def _grade_matrix(out: np.ndarray, pos: np.ndarray, grades: np.ndarray, n_q: int, depth: int) -> np.ndarray:
    """[question, position] matrix of the grades retrieved, EMPTY where nothing was."""
    matrix = np.full((n_q, depth), EMPTY, dtype=GRADES)
    matrix.reshape(-1)[out * depth + pos] = grades  # one flat scatter: cheaper than a 2-D one
    return matrix


def _ideal_gains(label_out: np.ndarray, label_grade: np.ndarray, n_q: int, depth_wanted: int,
                 gain: str) -> np.ndarray:
    """[question, position] gains of the ideal ranking: all positive labels, grade desc."""
    positive = (label_out >= 0) & (label_grade > 0)
    q, g = label_out[positive], label_grade[positive]
    order = np.lexsort((-g, q))
    q, g = q[order], g[order]
    pos, counts = _group_positions(q, n_q)
    depth = int(max(1, min(depth_wanted, counts.max(initial=0))))
    keep = pos < depth
    ideal = np.zeros((n_q, depth), dtype=np.float64)
    ideal[q[keep], pos[keep]] = gains(g[keep], gain)
    return ideal


# --------------------------------------------------------------------------- metrics


def _long_table(questions: pd.Series, names: tuple[str, ...], ks: np.ndarray,
                values: dict[str, np.ndarray]) -> pd.DataFrame:
    """The long output (qid, metric, k, value), built directly in (qid, metric, k) order."""
    metric_col: list[str] = []
    k_parts = [np.zeros(0, dtype=np.int64)]
    for name in names:
        cuts = np.zeros(1, dtype=np.int64) if name in UNCUT_METRICS else ks
        metric_col += [name] * len(cuts)
        k_parts.append(cuts)
    n_q, n_cols = len(questions), len(metric_col)
    matrix = np.hstack([values[n] for n in names]) if names else np.zeros((n_q, 0))
    return pd.DataFrame({
        "qid": questions.take(np.repeat(np.arange(n_q), n_cols)).reset_index(drop=True),
        "metric": pd.Series(metric_col, dtype="str").take(np.tile(np.arange(n_cols), n_q)).reset_index(drop=True),
        "k": np.tile(np.concatenate(k_parts), n_q).astype(np.int64),
        "value": matrix.reshape(-1).astype(np.float64),
    })


@dataclass(frozen=True)
class _Judged:
    """A run read against its labels: one row per evaluated question (qid order), one column per position."""

    questions: pd.Series  # qids with at least one relevant label, sorted
    grades: np.ndarray  # [question, position] GRADES: grade, UNJUDGED or EMPTY
    run_length: np.ndarray  # results retrieved per question
    n_rel: np.ndarray  # relevant labels per question
    label_out: np.ndarray  # row of each (deduplicated) label's question, -1 when not evaluated
    label_grade: np.ndarray  # grade of each (deduplicated) label
    documents: np.ndarray | None  # [question, position] document code of each result (-1: none), when asked for


def _judge(run: pd.DataFrame, qrels: pd.DataFrame, depth_wanted: int, threshold: int,
           through_r: bool = False, with_documents: bool = False) -> _Judged:
    """Integer-code run and labels, validate them, and build the grade matrix down to depth_wanted
    (or to the largest number of relevant labels when through_r, as R-precision reads rank R).

    with_documents also codes the run's doc_id column into a matrix of the same shape, for the pollution
    metrics: done here so that questions, ranks and positions are coded once for all metrics.
    """
    label_grade = _checked_grades(qrels)
    rank = _checked_ranks(run)

    # Integer codes: questions and items share one vocabulary between run and labels.
    run_q, label_q, qid_vocab = _shared_codes(_ids(run, "qid", "run"), _ids(qrels, "qid", "qrels"))
    run_items, label_items = _ids(run, "item_id", "run"), _ids(qrels, "item_id", "qrels")
    # String ids: the run's items are fingerprinted, not hashed, and matched to the labels on their fingerprints.
    fingerprints = _fingerprints(run_items) if _arrow_strings(label_items) is not None else None
    if fingerprints is None:
        run_i, label_i, item_vocab = _shared_codes(run_items, label_items)
    else:
        label_i, item_vocab = _codes(label_items)
        run_i = fingerprints  # the duplicate check's stand-in for codes (exact=False below)
    label_keys = _pair_keys(label_q, label_i, len(item_vocab))
    keep_label = _deduplicated_labels(qrels, label_keys, label_grade)
    label_q, label_keys, label_grade = label_q[keep_label], label_keys[keep_label], label_grade[keep_label]
    # Grade of each run row: its label's, UNJUDGED when it has none (the few labels hashed, the run's keys probed).
    found = None if fingerprints is None else _matched_labels(run_q, run_items, label_q, label_items[keep_label],
                                                              fingerprints)
    if found is None:  # coded ids, or a fingerprint collision: the ids are coded
        if fingerprints is not None:
            run_i, label_i, item_vocab = _shared_codes(run_items, label_items)
            label_keys, fingerprints = _pair_keys(label_q, label_i[keep_label], len(item_vocab)), None
        found = _probed(pd.Index(label_keys), _pair_keys(run_q, run_i, len(item_vocab)), label_i[keep_label], run_i,
                        len(item_vocab))
    row_label = found
    row_grade = np.append(label_grade.astype(GRADES), GRADES(UNJUDGED))[row_label]  # -1: the last, UNJUDGED

    # Questions evaluated: those with a relevant label, in qid order; out[code] = their row.
    relevant_codes = np.unique(label_q[label_grade >= threshold])
    names_of_relevant = qid_vocab[relevant_codes].to_numpy(dtype=object)
    by_name = np.argsort(names_of_relevant, kind="stable")
    questions = pd.Series(names_of_relevant[by_name], dtype="str")
    n_q = len(questions)
    out_of_code = np.full(len(qid_vocab), -1, dtype=np.int64)
    out_of_code[relevant_codes[by_name]] = np.arange(n_q)
    label_out = out_of_code[label_q]
    n_rel = np.bincount(label_out[(label_out >= 0) & (label_grade >= threshold)], minlength=n_q)

    # Run rows in (question, rank) order, their positions, and how deep the matrix must go.
    order = _rank_order(run, run_q, rank)
    rows_q = run_q if order is None else run_q[order]
    pos, counts = _group_positions(rows_q, len(qid_vocab))
    _check_items_once(run, rows_q, order, run_i, pos, counts, exact=fingerprints is None)
    run_length = np.zeros(n_q, dtype=np.int64)
    evaluated = out_of_code >= 0
    run_length[out_of_code[evaluated]] = counts[evaluated]
    wanted = max(depth_wanted, int(n_rel.max(initial=0)) if through_r else 1)
    depth = int(max(1, min(wanted, run_length.max(initial=0))))
    rows_out = out_of_code[rows_q]
    kept = (rows_out >= 0) & (pos < depth)
    rows = np.flatnonzero(kept) if order is None else order[kept]  # run row of each matrix cell filled
    rows_out, pos = rows_out[kept], pos[kept]
    grades = _grade_matrix(rows_out, pos, row_grade[rows], n_q, depth)
    documents = None
    if with_documents:
        _require_columns(run, ("doc_id",), "run")
        documents = np.full((n_q, depth), -1, dtype=np.int32)
        documents.reshape(-1)[rows_out * depth + pos] = _codes(_ids(run, "doc_id", "run"))[0][rows]
    return _Judged(questions, grades, run_length, n_rel, label_out, label_grade, documents)


def per_query_metrics(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    ks: Sequence[int],
    *,
    relevance_threshold: int = 1,
    gain: str = "linear",
    metrics: Sequence[str] | None = None,
    rbp_p: float = 0.8,
) -> pd.DataFrame:
    """Long table qid, metric, k, value for every question with at least one relevant label.

    The pollution metrics (POLLUTION_METRICS) and the EXTRA_METRICS_* are computed only when asked for in
    `metrics`; the pollution ones read the run's doc_id column, RBP uses the persistence rbp_p. A labelled question
    absent from the run scores 0 on every metric (RBP's residual: 1).
    """
    ks_arr = _validated_ks(ks)
    names = _validated_metrics(metrics)
    threshold = _validated_threshold(relevance_threshold)
    gain = _validated_gain(gain)
    rbp_p = _validated_persistence(rbp_p)
    at_k = [n for n in names if n in METRICS_AT_K + POLLUTION_METRICS + EXTRA_METRICS_AT_K]
    if at_k and len(ks_arr) == 0:
        raise ValueError(f"metrics {at_k} need at least one cutoff k")
    max_k = int(ks_arr.max()) if len(ks_arr) else 1
    table = [METRICS[name] for name in names]
    polluted = any(metric.family == "pollution" for metric in table)  # they read each result's document
    every_result = any(metric.reads == "run" for metric in table)
    judged = _judge(run, qrels, np.iinfo(np.int64).max if every_result else max_k, threshold,
                    through_r=any(metric.reads == "r" for metric in table), with_documents=polluted)
    n_q = len(judged.questions)
    if gain == "exponential" and judged.label_grade.max(initial=0) > EXP_GAIN_MAX:
        raise ValueError(f"exponential gain 2^grade - 1 overflows above grade {EXP_GAIN_MAX}: "
                         f"qrels hold grade {judged.label_grade.max()}; use the linear gain")
    problem = grade_problem(qrels, names)
    if problem:
        raise ValueError(problem)
    ideal = (_ideal_gains(judged.label_out, judged.label_grade, n_q, max_k, gain)
             if any(metric.ideal_gains for metric in table) else np.zeros((n_q, 1)))
    n_nonrel = np.zeros(n_q, dtype=np.int64)
    if any(metric.nonrelevant_counts for metric in table):
        evaluated = (judged.label_out >= 0) & (judged.label_grade >= 0) & (judged.label_grade < threshold)
        n_nonrel = np.bincount(judged.label_out[evaluated], minlength=n_q)
    read = MetricInput(judged.grades, judged.run_length, ideal, judged.n_rel, n_nonrel, judged.documents, ks_arr,
                       threshold, gain, rbp_p)
    values = {name: METRICS[name].formula(read) for name in names}
    return _long_table(judged.questions, names, ks_arr, values)


def grade_problem(qrels: pd.DataFrame, metrics: Iterable[str]) -> str:
    """Why one of these metrics cannot score these labels ('' when all can): a grade above its table's max_grade
    (ERR's stop probability takes grades up to ERR_MAX_GRADE, as gdeval)."""
    limits = [(METRICS[name].max_grade, METRICS[name].label) for name in metrics if name in METRICS]
    limits = sorted((limit, label) for limit, label in limits if limit is not None)
    if not limits:
        return ""
    grade = _checked_grades(qrels)
    limit, label = limits[0]
    if grade.max(initial=0) <= limit:
        return ""
    i = int(np.argmax(grade))
    return (f"{label} takes grades up to {limit}: {_row_name(qrels, i)} has grade {grade[i]}; "
            f"map the grades onto 0..{limit} or leave {label} out")


def grade_labels(qrels: pd.DataFrame) -> tuple[str, ...]:
    """Labels of grades_by_rank's codes for these qrels: grades 0..3 and any other grade they hold, ascending, then
    "unjudged" and "none" (GRADE_LABELS when every grade is in 0..3)."""
    grades = sorted({0, 1, 2, 3} | set(_checked_grades(qrels).tolist()))
    return tuple(str(g) for g in grades) + ("unjudged", "none")


def grades_by_rank(run: pd.DataFrame, qrels: pd.DataFrame, k: int, *,
                   relevance_threshold: int = 1) -> tuple[pd.Series, np.ndarray]:
    """The evaluated questions (qid order) and a [question, rank 1..k] matrix of codes into grade_labels(qrels).

    With grades 0..3, code g is the grade retrieved there, 4 a result without a label, 5 no result (short run or
    question missing from the run). Questions are those per_query_metrics evaluates.
    """
    k = int(_validated_ks([k])[0])
    judged = _judge(run, qrels, k, _validated_threshold(relevance_threshold))
    labels = grade_labels(qrels)
    values = np.array([int(g) for g in labels[:-2]], dtype=np.int64)
    codes = np.full((len(judged.questions), k), labels.index("none"), dtype=np.int32)
    grades = judged.grades
    codes[:, : grades.shape[1]] = np.where(grades == UNJUDGED, labels.index("unjudged"),
                                           np.where(grades == EMPTY, labels.index("none"),
                                                    np.searchsorted(values, grades)))
    return judged.questions, codes


def questions_without_relevant(qrels: pd.DataFrame, qids: Iterable[str], relevance_threshold: int = 1) -> list[str]:
    """Questions (from qids) that have no label with grade >= threshold: excluded from averages, counted apart.

    Returned sorted and without repeats, so the count and the listing are deterministic.
    The labels are validated like per_query_metrics does (integer grades, no conflicting grades).
    """
    threshold = _validated_threshold(relevance_threshold)
    grade = _checked_grades(qrels)
    qid = _ids(qrels, "qid", "qrels")
    label_q, _ = pd.factorize(qid)
    label_i, item_vocab = pd.factorize(_ids(qrels, "item_id", "qrels"))
    keys = _pair_keys(label_q.astype(np.int64), label_i.astype(np.int64), len(item_vocab))
    _deduplicated_labels(qrels, keys, grade)  # raises on conflicting grades
    with_relevant = set(qid[grade >= threshold].tolist())
    return sorted({str(q) for q in qids} - with_relevant)
