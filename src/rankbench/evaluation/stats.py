"""Significance and uncertainty for per-query metric values: bootstrap CIs, paired tests, Holm, W/T/L.

Per-query values are the unit of analysis. Every random procedure takes an integer seed (or a
``numpy.random.SeedSequence``) and draws from ``numpy.random.default_rng`` (PCG64), so the same
seed gives identical numbers on every call. Resampling is done as matrix operations over chunks of
resamples whose size depends only on the problem size, never on the caller's batch of series.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

SeedLike = int | np.random.SeedSequence

# Upper bound on the number of elements in one resampling chunk (bounds memory to a few tens of MB).
_CHUNK_ELEMENTS = 1 << 21
# Largest number of non-zero differences whose 2**m sign patterns may be enumerated exactly.
MAX_EXACT_NONZERO = 24
# Absolute tolerance under which a per-query difference counts as zero (a tie): float noise such
# as (0.1 + 0.2) - 0.3 must not count as a win, a non-zero difference or a non-zero variance.
TIE_TOLERANCE = 1e-12
# Relative tolerance for "as extreme as observed" comparisons, so float rounding of equal sums
# (e.g. a sign pattern that reproduces |observed| exactly in the reals) still counts as a tie.
_TIE_RTOL = 1e-10

COMPARISON_COLUMNS: tuple[str, ...] = (
    "method_a",
    "method_b",
    "mean_a",
    "mean_b",
    "diff",
    "diff_low",
    "diff_high",
    "d_z",
    "d_z_low",
    "d_z_high",
    "p_randomization",
    "p_t",
    "p_holm",
    "wins",
    "ties",
    "losses",
    "n",
    "below_one_question",
    "is_baseline_pair",
)


def _as_finite_float(values: np.ndarray | Sequence[float], name: str) -> np.ndarray:
    """Input as a float64 array, rejecting NaN/inf so no statistic silently propagates them."""
    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _paired_differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Validated 1-D per-query differences a - b (same questions, same order, at least one)."""
    a_arr = _as_finite_float(a, "a")
    b_arr = _as_finite_float(b, "b")
    if a_arr.ndim != 1 or a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must be 1-D arrays of equal length, got {a_arr.shape} and {b_arr.shape}")
    if a_arr.size == 0:
        raise ValueError("a and b must contain at least one query")
    return a_arr - b_arr


def _chunk_size(width: int, total: int) -> int:
    """Resamples per chunk so that one chunk holds about _CHUNK_ELEMENTS numbers (depends on width only)."""
    return max(1, min(total, _CHUNK_ELEMENTS // max(width, 1)))


_PART_BITS = 21  # three 21-bit integer parts hold a float64's 53-bit significand
# Sums computed per block of rows, about this many (1 MB): a block's buffer stays in cache and the next block reuses
# it, where one array of every row's sums would be slow to allocate and to page in (0.4 CPU s per 160 MB here).
_BLOCK_ELEMENTS = 1 << 17


def _row_blocks(rows: int, width: int) -> list[slice]:
    """Consecutive blocks of `rows` rows of `width` sums each, about _BLOCK_ELEMENTS sums a block."""
    step = max(1, _BLOCK_ELEMENTS // max(width, 1))
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)]


def _integer_parts(rows: np.ndarray, weight_sum: float) -> tuple[list[np.ndarray], np.ndarray]:
    """Each row scaled by a power of two to |x| < 1 and cut into three 21-bit integer parts, each kept in its place
    (part p a multiple of 2**(-21 p), exact); and each row's exponent that undoes the scaling.

    A product of a part with non-negative integer weights of row sums up to `weight_sum` < 2**31 is then an exact
    sum of integers below 2**53 whatever BLAS's order or thread count (a job's `threads`). The first two parts come
    as one when their 42 bits times weight_sum stay below 2**53: their sum, exact either way, is one product.
    """
    _, exponent = np.frexp(np.abs(rows).max(axis=1, initial=0.0))
    scaled = np.ldexp(rows, -exponent[:, None])  # |scaled| < 1, exact
    parts = []
    for part in range(3):
        scaled = np.ldexp(scaled, _PART_BITS)
        integer = np.floor(scaled)
        scaled -= integer  # exact: the fraction left below this part's bits
        parts.append(np.ldexp(integer, -_PART_BITS * (part + 1)))
    if weight_sum <= 2.0 ** (53 - 2 * _PART_BITS):
        parts = [parts[0] + parts[1], parts[2]]
    return parts, exponent


def _weighted_sums_into(parts: Sequence[np.ndarray], exponent: np.ndarray, weights: np.ndarray, out: np.ndarray
                        ) -> np.ndarray:
    """out [r, s] = the rows (as their integer parts [r, n] and exponents) times weights.T [s, n]: the parts'
    products added in order, then scaled back; a part that is zero in a row is not multiplied (adding 0 is exact)."""
    np.matmul(parts[0], weights.T, out=out)
    out += 0.0  # as 0.0 + the first product: a sum of -0.0 terms becomes 0.0
    for part in parts[1:]:
        nonzero = part.any(axis=1)
        if nonzero.all():
            out += part @ weights.T
        elif nonzero.any():
            out[nonzero] += part[nonzero] @ weights.T
    scale = np.ldexp(1.0, exponent)
    if np.isinf(scale).any():  # rows of magnitude 2**1023 and above: 2**exponent itself overflows
        return np.ldexp(out, exponent[:, None], out=out)
    out *= scale[:, None]  # exact, as ldexp (which is far slower)
    return out


def _resample_counts(n: int, n_resamples: int, seed: SeedLike) -> Iterator[tuple[slice, np.ndarray]]:
    """Question resamples drawn from the seed in chunks whose size depends on n only: each chunk's resample columns
    and how often each question is in each of its resamples [size, n], as floats."""
    rng = np.random.default_rng(seed)
    chunk = _chunk_size(n, n_resamples)
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        idx = rng.integers(0, n, size=(size, n))
        # Counts of each query in each resample, via one bincount over offset indices.
        offsets = (np.arange(size) * n)[:, None]
        counts = np.bincount((idx + offsets).ravel(), minlength=size * n).reshape(size, n)
        yield slice(start, start + size), counts.astype(np.float64)


def _bootstrap_mean_blocks(rows: np.ndarray, n_resamples: int, seed: SeedLike) -> Iterator[tuple[slice, np.ndarray]]:
    """Blocks of the rows of a [rows, n_queries] array with their [block, n_resamples] means over question resamples
    drawn from the seed (the same resampled questions for every row). When one chunk holds every resample, a block
    at a time in a buffer the next block reuses; otherwise every row in one array, chunk by chunk."""
    n = rows.shape[1]
    parts, exponent = _integer_parts(rows, n)  # a resample's counts sum to n
    chunks, chunk = _resample_counts(n, n_resamples, seed), _chunk_size(n, n_resamples)
    blocks = _row_blocks(len(rows), chunk)
    buffer = np.empty((blocks[0].stop if blocks else 0, chunk))
    if chunk == n_resamples:
        _, counts = next(chunks)
        for block in blocks:
            means = _weighted_sums_into([part[block] for part in parts], exponent[block], counts,
                                        buffer[: block.stop - block.start])
            means /= n
            yield block, means
        return
    means = np.empty((len(rows), n_resamples))
    for columns, counts in chunks:
        for block in blocks:
            sums = _weighted_sums_into([part[block] for part in parts], exponent[block], counts,
                                       buffer[: block.stop - block.start, : counts.shape[0]])
            np.divide(sums, n, out=means[block, columns])
    yield slice(0, len(rows)), means


def _bootstrap_means(rows: np.ndarray, n_resamples: int, seed: SeedLike) -> np.ndarray:
    """[rows, n_resamples] means of each row of a [rows, n_queries] array over question resamples drawn from the
    seed (the same resampled questions for every row)."""
    means = np.empty((len(rows), n_resamples))
    for block, values in _bootstrap_mean_blocks(rows, n_resamples, seed):
        means[block] = values
    return means


def ranks_of(means: np.ndarray) -> np.ndarray:
    """Rank of each method along axis -2 of [..., methods, x] means: 1 + how many methods score strictly higher
    (tied methods share the better rank)."""
    return 1 + (means[..., None, :, :] > means[..., :, None, :]).sum(axis=-2)


def rank_intervals(
    values: np.ndarray,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: SeedLike = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each method's rank by mean and the percentile bootstrap interval of that rank, for [groups, methods, queries]
    values (1 = best; ties share the better rank).

    Questions are resampled (all methods and groups on the same resamples, so the methods stay paired) and the
    methods ranked in every resample; the interval holds the central `confidence` share of those ranks (lower and
    upper order statistics, so the bounds are ranks). Returns rank, low, high, each [groups, methods].
    """
    arr = _as_finite_float(values, "values")
    if arr.ndim != 3 or arr.shape[2] == 0:
        raise ValueError(f"values must be a [groups, methods, queries] array with queries >= 1, got {arr.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    groups, methods, n = arr.shape
    means = _bootstrap_means(arr.reshape(-1, n), n_resamples, seed).reshape(groups, methods, n_resamples)
    resampled = ranks_of(means)
    alpha = (1.0 - confidence) / 2.0
    low = np.quantile(resampled, alpha, axis=-1, method="lower").astype(np.int64)
    high = np.quantile(resampled, 1.0 - alpha, axis=-1, method="higher").astype(np.int64)
    rank = ranks_of(arr.mean(axis=-1)[..., None])[..., 0]
    return rank.astype(np.int64), low, high


def sorted_percentiles(rows: np.ndarray, percentiles: Sequence[float]) -> list[np.ndarray]:
    """np.percentile(rows, q, axis=1) (method "linear") of each q, bit for bit, for rows already sorted along axis 1:
    numpy's own steps (index (n - 1) q / 100, its floor and the next, numpy's _lerp), without the partition that
    np.percentile runs on every row even when it is sorted (half of bootstrap_ci's time after the sort)."""
    n = rows.shape[1]
    quantiles = np.true_divide(np.asarray(percentiles, dtype=np.float64), 100)
    virtual = (n - 1) * quantiles
    previous = np.floor(virtual)
    following = previous + 1
    following[virtual >= n - 1] = previous[virtual >= n - 1] = -1  # the last value, weighted as numpy weighs it
    gamma = virtual - previous
    values = []
    for index, next_index, weight in zip(previous.astype(np.intp), following.astype(np.intp), gamma):
        a, b = rows[:, index], rows[:, next_index]
        difference = b - a
        values.append(b - difference * (1 - weight) if weight >= 0.5 else a + difference * weight)
    return values


def bootstrap_ci(
    values: np.ndarray,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: SeedLike = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the mean for each row of a [n_series, n_queries] array (1-D accepted).

    All rows share the same resampled query indices (so rows of paired series stay paired), and a
    row's interval does not depend on which other rows are passed. Returns (low, high) with shape
    ``values.shape[:-1]`` (0-d arrays for 1-D input). Quantiles use numpy's linear interpolation,
    as ``scipy.stats.bootstrap(method='percentile')`` does.
    """
    arr = _as_finite_float(values, "values")
    if arr.ndim not in (1, 2):
        raise ValueError(f"values must be 1-D or 2-D, got shape {arr.shape}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    rows = np.atleast_2d(arr)
    n = rows.shape[1]
    if n == 0:
        raise ValueError("values must contain at least one query")
    # Identical rows (frequent: hit@5 = hit@10, all-zero metrics of a small kind) are resampled once.
    rows, inverse = np.unique(rows, axis=0, return_inverse=True)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.empty(len(rows)), np.empty(len(rows))
    for block, means in _bootstrap_mean_blocks(rows, n_resamples, seed):  # a row's percentiles are its own
        # sorted, then read off (numpy's sort is vectorized where its partition is not: 2x faster than percentile)
        means.sort(axis=1)
        low[block], high[block] = sorted_percentiles(means, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    low, high = low[inverse.reshape(-1)], high[inverse.reshape(-1)]
    if arr.ndim == 1:
        return np.asarray(low[0]), np.asarray(high[0])
    return low, high


def _count_extreme(values: np.ndarray, flips: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Per row of `values` [rows, m]: sign patterns (rows of 0/1 `flips` [patterns, m]) with |flipped sum| >= its
    threshold."""
    parts, exponent = _integer_parts(values, values.shape[1])
    flips = flips.astype(np.float64)
    sums = values.sum(axis=1)
    count = np.empty(len(values), dtype=np.int64)
    blocks = _row_blocks(len(values), len(flips))
    buffer = np.empty((blocks[0].stop if blocks else 0, len(flips)))
    for block in blocks:
        null = _weighted_sums_into([part[block] for part in parts], exponent[block], flips,
                                   buffer[: block.stop - block.start])
        null *= -2.0
        null += sums[block, None]  # the sum with the flipped terms negated: sum - 2 * flipped
        count[block] = np.count_nonzero(np.abs(null, out=null) >= thresholds[block, None], axis=1)
    return count


def _exact_counts(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Extreme-pattern counts over all 2**m sign patterns of each row of `values` [rows, m]."""
    m = values.shape[1]
    n_patterns = 1 << m
    bit_positions = np.arange(m, dtype=np.int64)
    chunk = _chunk_size(m * max(len(values), 1), n_patterns)
    count = np.zeros(len(values), dtype=np.int64)
    for start in range(0, n_patterns, chunk):
        codes = np.arange(start, min(start + chunk, n_patterns), dtype=np.int64)
        count += _count_extreme(values, (codes[:, None] >> bit_positions) & 1, thresholds)
    return count


def randomization_p_values(
    differences: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: SeedLike = 0,
    exact: bool | None = None,
) -> np.ndarray:
    """Two-sided paired randomization (sign-flip) test of mean = 0 for each row of [rows, n_queries] differences.

    p is the share of sign patterns with |mean of flipped differences| >= |observed mean|. Zero
    differences (|d| <= TIE_TOLERANCE) are unaffected by flips, so a row's m non-zero ones decide.
    ``exact=None`` enumerates all 2**m patterns of a row when 2**m <= n_resamples (as
    scipy.stats.permutation_test does): p = count / 2**m (the identity pattern is the observed one).
    Other rows use Monte Carlo, p = (count + 1) / (n_resamples + 1), with sign flips drawn from the
    seed and shared by every row, so a row's p does not depend on the other rows. ``exact=True``
    forces enumeration (m <= 24), ``exact=False`` Monte Carlo. Rows of zero differences give p = 1.
    """
    d = _as_finite_float(differences, "differences")
    if d.ndim != 2 or d.shape[1] == 0:
        raise ValueError(f"differences must be a [rows, n_queries] array with n_queries >= 1, got {d.shape}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    nonzero = np.abs(d) > TIE_TOLERANCE
    d = np.where(nonzero, d, 0.0)
    m = nonzero.sum(axis=1)
    thresholds = np.abs(d.sum(axis=1)) - _TIE_RTOL * np.abs(d).sum(axis=1)
    if exact is None:
        use_exact = (m <= MAX_EXACT_NONZERO) & (2.0**m <= n_resamples)
    else:
        use_exact = np.full(len(d), bool(exact))
        if exact and m.max(initial=0) > MAX_EXACT_NONZERO:
            raise ValueError(f"exact enumeration needs 2**{m.max()} sign patterns (limit 2**{MAX_EXACT_NONZERO}); "
                             "use exact=False")
    p = np.ones(len(d), dtype=np.float64)
    for size in np.unique(m[use_exact & (m > 0)]):
        rows = np.flatnonzero(use_exact & (m == size))
        # Each row's non-zero differences, moved to the front in their original order.
        front = np.argsort(~nonzero[rows], axis=1, kind="stable")[:, :size]
        values = np.take_along_axis(d[rows], front, axis=1)
        p[rows] = _exact_counts(values, thresholds[rows]) / float(1 << int(size))
    sampled = np.flatnonzero(~use_exact & (m > 0))
    if len(sampled):
        n = d.shape[1]
        rng = np.random.default_rng(seed)
        chunk = _chunk_size(n, n_resamples)
        count = np.zeros(len(sampled), dtype=np.int64)
        for start in range(0, n_resamples, chunk):
            flips = rng.integers(0, 2, size=(min(chunk, n_resamples - start), n), dtype=np.int8)
            count += _count_extreme(d[sampled], flips, thresholds[sampled])
        p[sampled] = (count + 1) / (n_resamples + 1)
    return p


def paired_randomization_test(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    seed: SeedLike = 0,
    exact: bool | None = None,
) -> float:
    """Two-sided paired randomization test of mean(a - b) = 0 (one row of randomization_p_values)."""
    d = _paired_differences(a, b)
    return float(randomization_p_values(d[None, :], n_resamples=n_resamples, seed=seed, exact=exact)[0])


def _t_statistics(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Validated [rows, n_queries] differences' |t| on the rows that vary (none when n_queries < 2), which rows vary
    (more than TIE_TOLERANCE apart), which are all zero (within TIE_TOLERANCE of it), and n_queries.

    One pass each for the rows' max, min, sum and squared deviations: the mean and sd (ddof 1) in numpy's own
    arithmetic (sum / n, then the sum of (d - mean)**2 over n - 1), bit for bit d.mean and d.std; NaN and inf carry
    into the max or min, so those also tell the rows that are not finite. t's mean is that of the varied rows as
    one C-ordered block (the former d[varied].mean): numpy sums a strided row in another order, so a transposed or
    Fortran-ordered d (the aggregate's pairs) takes its mean from that copy.
    """
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] == 0:
        raise ValueError(f"differences must be a [rows, n_queries] array with n_queries >= 1, got {d.shape}")
    high, low = d.max(axis=1), d.min(axis=1)
    if not (np.isfinite(high).all() and np.isfinite(low).all()):
        raise ValueError("differences contains NaN or infinite values")
    n = d.shape[1]
    varied = high - low > TIE_TOLERANCE
    all_zero = (high <= TIE_TOLERANCE) & (low >= -TIE_TOLERANCE)
    if n < 2:
        return np.zeros(0), varied, all_zero, n
    mean = d.sum(axis=1, keepdims=True)
    mean /= n
    squares = d - mean
    np.square(squares, out=squares)
    variance = squares.sum(axis=1)
    variance /= n - 1
    row_means = mean[varied, 0] if d.flags.c_contiguous else d[varied].mean(axis=1)
    return np.abs(row_means / (np.sqrt(variance[varied]) / np.sqrt(n))), varied, all_zero, n


def _two_sided_p(t_stat: np.ndarray, n: int) -> np.ndarray:
    """Two-sided p of |t| statistics of n paired differences: 2 t.sf(|t|, n - 1), capped at 1."""
    from scipy.special import stdtr  # scipy.stats.t.sf's own function, without scipy.stats's import (0.6 CPU s)

    return np.minimum(1.0, 2.0 * stdtr(n - 1, -t_stat))


def t_test_p_values(differences: np.ndarray) -> np.ndarray:
    """Two-sided paired t-test p of each row of [rows, n_queries] differences; 1.0 when a row is all zero,
    0.0 when all equal and non-zero, NaN for a single non-zero difference.

    "Equal" allows TIE_TOLERANCE of float noise. Equal non-zero differences (zero variance, e.g.
    every question gains exactly the same) are the limit t -> infinity, so p = 0.0, as
    scipy.stats.ttest_rel gives for exactly equal ones; near-equal ones would otherwise give a
    meaningless p from rounding noise. Otherwise equals scipy.stats.ttest_rel.
    """
    t_stat, varied, all_zero, n = _t_statistics(differences)
    p = np.full(len(varied), np.nan)
    if n >= 2:
        p[varied] = _two_sided_p(t_stat, n)
        p[~varied] = 0.0
    p[all_zero] = 1.0
    return p


def noninferiority_p_values(differences: np.ndarray, margins: np.ndarray | float) -> np.ndarray:
    """One-sided paired test p of H0: mean <= -margin against H1: mean > -margin, for each row of [rows, n_queries]
    differences a - b with its margin δ >= 0: a small p shows a no worse than b by more than δ (non-inferiority).

    Hall's (1992) skewness-corrected t-test on the shifted differences x = d + δ: with r = x̄ / s and γ = μ3 / s³
    (μ3 the third central moment), T = √n (r + γ r² / 3 + γ² r³ / 27 + γ / (6 n)) against t(n - 1): Johnson's (1978)
    correction made monotone in r. Not the sign-flip test of the superiority marks: shifted by δ, the differences are
    not symmetric about 0 under H0 (every tied question becomes +δ), which sign flips assume; and a few large losses
    among many ties skew them, which makes the plain t-test too eager to show non-inferiority (tests/evaluation/
    test_margins.py measures the size: at most α from about 100 questions on skewed, tie-heavy differences; fewer
    questions can exceed it, e.g. 0.06 at 43 and 0.11 at 20).
    Symmetric differences (γ = 0) give scipy.stats.ttest_1samp(d, -δ, alternative='greater'). Rows that do not vary
    (within TIE_TOLERANCE) give p = 0 when their common value is above -δ, else 1, but NaN when every difference is 0:
    questions that all tie say nothing about how large a rare loss could be. A single question gives NaN.
    """
    from scipy.special import stdtr

    d = _as_finite_float(differences, "differences")
    if d.ndim != 2 or d.shape[1] == 0:
        raise ValueError(f"differences must be a [rows, n_queries] array with n_queries >= 1, got {d.shape}")
    margin = np.broadcast_to(_as_finite_float(np.atleast_1d(margins), "margins"), (len(d),))
    if np.any(margin < 0.0):
        raise ValueError("margins must be >= 0")
    n = d.shape[1]
    p = np.full(len(d), np.nan)
    if n < 2:
        return p
    shifted = d.mean(axis=1) + margin
    varied = np.ptp(d, axis=1) > TIE_TOLERANCE
    x = d[varied] + margin[varied, None]
    mean, sd = shifted[varied], x.std(axis=1, ddof=1)
    gamma = ((x - x.mean(axis=1, keepdims=True)) ** 3).mean(axis=1) / sd**3
    ratio = mean / sd
    t_stat = np.sqrt(n) * (ratio + gamma * ratio**2 / 3.0 + gamma**2 * ratio**3 / 27.0 + gamma / (6.0 * n))
    p[varied] = stdtr(n - 1, -t_stat)
    tied = ~varied & (np.abs(d).max(axis=1) <= TIE_TOLERANCE)
    p[~varied] = np.where(shifted[~varied] > TIE_TOLERANCE, 0.0, 1.0)
    p[tied] = np.nan
    return p


def equivalence_p_values(differences: np.ndarray, margins: np.ndarray | float) -> np.ndarray:
    """TOST p of each row of [rows, n_queries] differences: the larger of the two one-sided p (a no worse than b by
    more than δ, and b no worse than a by more than δ); a small p shows |mean| < δ (equivalence)."""
    d = _as_finite_float(differences, "differences")
    return np.maximum(noninferiority_p_values(d, margins), noninferiority_p_values(-d, margins))


# Relative distance from the critical |t| beyond which t_test_rejects decides a row by |t| alone: there p is on its
# side of alpha by about this share of alpha or more, orders of magnitude beyond stdtr's rounding (about 1e-15).
_CRITICAL_BAND = 1e-4


def t_test_rejects(differences: np.ndarray, alpha: float) -> np.ndarray:
    """t_test_p_values(differences) < alpha, row by row, with the t distribution evaluated only on the rows whose
    |t| lies within _CRITICAL_BAND of the critical value (stdtr costs about 1 us a row, the rest a few ns)."""
    from scipy.special import stdtrit

    t_stat, varied, all_zero, n = _t_statistics(differences)
    rejects = np.zeros(len(varied), dtype=bool)  # a single difference: p is NaN, never below alpha
    if n >= 2:
        rejects[~varied] = alpha > 0.0  # p = 0
        if 0.0 < alpha < 1.0:
            critical = -float(stdtrit(n - 1, alpha / 2))
            decided = t_stat > critical
            near = np.abs(t_stat - critical) <= _CRITICAL_BAND * critical
            decided[near] = _two_sided_p(t_stat[near], n) < alpha
        else:
            decided = _two_sided_p(t_stat, n) < alpha
        rejects[varied] = decided
    rejects[all_zero] = alpha > 1.0  # p = 1
    return rejects


def standardized_effects(differences: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, ...]:
    """Cohen's d_z = mean / sd (ddof 1) of each row of [rows, n_queries] paired differences, with its CI.

    The CI is the normal approximation d_z ± z sqrt(1/n + d_z^2 / (2 n)) of d_z's standard error (Hedges & Olkin),
    cheap enough for every pair of every table. NaN (and NaN bounds) when the differences do not vary (all within
    TIE_TOLERANCE of each other: sd 0 leaves d_z undefined) or n < 2.
    """
    from scipy.special import ndtri  # scipy.stats.norm.ppf's own function

    d = _as_finite_float(differences, "differences")
    if d.ndim != 2 or d.shape[1] == 0:
        raise ValueError(f"differences must be a [rows, n_queries] array with n_queries >= 1, got {d.shape}")
    n = d.shape[1]
    d_z = np.full(len(d), np.nan)
    if n >= 2:
        varied = np.ptp(d, axis=1) > TIE_TOLERANCE
        d_z[varied] = d[varied].mean(axis=1) / d[varied].std(axis=1, ddof=1)
    half = ndtri(0.5 + confidence / 2.0) * np.sqrt(1.0 / n + d_z**2 / (2.0 * n))
    return d_z, d_z - half, d_z + half


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (monotone, capped at 1), in input order.

    The i-th smallest p (1-based) is multiplied by (m - i + 1), then a running maximum keeps the
    adjusted values in the order of the raw ones; this controls the family-wise error rate.
    """
    p = np.asarray(p_values, dtype=np.float64).ravel()
    if p.size == 0:
        return p
    if np.any(np.isnan(p)) or np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("p-values must lie in [0, 1] and not be NaN")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def holm_versus_best(best: str, others: Sequence[str], p_values: Mapping[frozenset[str], float]) -> np.ndarray:
    """Holm-adjusted p of best vs each of others, the family of the pairs with the best (a pair never compared
    counts as p = 1). The tiers and the findings about the best both use it, so they cannot disagree."""
    return holm([p_values.get(frozenset((best, m)), 1.0) for m in others])


def tiers(means: dict[str, float], p_values: dict[frozenset[str], float], alpha: float) -> dict[str, str]:
    """Tier letter of each method: 'a' holds the best method and every method not significantly worse than it (Holm
    over its pairs with the best, p >= alpha), 'b' does the same among the methods left, and so on.

    ``p_values`` maps a pair {x, y} to its raw two-sided p; a pair without one (never compared) counts as not
    significant. Ties in the mean go to the method whose name sorts first.
    """
    remaining = sorted(means, key=lambda m: (-means[m], m))
    letters: dict[str, str] = {}
    level = 0
    while remaining:
        best, others = remaining[0], remaining[1:]
        adjusted = holm_versus_best(best, others, p_values)
        tied = {m for m, p in zip(others, adjusted) if p >= alpha or means[m] >= means[best]}
        name = chr(ord("a") + level) if level < 26 else str(level + 1)
        for m in [best, *sorted(tied)]:
            letters[m] = name
        remaining = [m for m in others if m not in tied]
        level += 1
    return letters


def win_tie_loss(a: np.ndarray, b: np.ndarray, *, tolerance: float = TIE_TOLERANCE) -> tuple[int, int, int]:
    """Questions where a beats, ties (|a - b| <= tolerance, absorbing float noise) and loses to b."""
    d = _paired_differences(a, b)
    wins = int(np.count_nonzero(d > tolerance))
    losses = int(np.count_nonzero(d < -tolerance))
    return wins, d.size - wins - losses, losses


def paired_comparison(
    a: np.ndarray,
    b: np.ndarray,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: SeedLike = 0,
) -> dict[str, np.ndarray]:
    """Row by row, a vs b over the same questions ([rows, n_queries] each): effect size with its CI, p-values, W/T/L.

    Returns arrays diff (mean a - mean b), diff_low/diff_high (percentile bootstrap CI of the mean
    paired difference), d_z/d_z_low/d_z_high (standardized effect, see standardized_effects), p_randomization,
    p_t, wins/ties/losses and below_one_question (one question alone accounts for the difference, see
    below_one_question). Resampled indices and sign flips come from the
    seed alone (two independent children of it) and are shared by all rows: a row's numbers do not
    depend on the other rows, and every pair of methods is compared on the same resamples.
    """
    a_arr, b_arr = _as_finite_float(a, "a"), _as_finite_float(b, "b")
    if a_arr.ndim != 2 or a_arr.shape != b_arr.shape or a_arr.shape[1] == 0:
        raise ValueError(f"a and b must be [rows, n_queries] arrays of equal shape, got {a_arr.shape} and "
                         f"{b_arr.shape}")
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(int(seed))
    boot_seed, perm_seed = sequence.spawn(2)
    d = a_arr - b_arr
    n = d.shape[1]
    diff = a_arr.mean(axis=1) - b_arr.mean(axis=1)
    low, high = bootstrap_ci(d, n_resamples=n_resamples, confidence=confidence, seed=boot_seed)
    wins = np.count_nonzero(d > TIE_TOLERANCE, axis=1)
    losses = np.count_nonzero(d < -TIE_TOLERANCE, axis=1)
    d_z, d_z_low, d_z_high = standardized_effects(d, confidence)
    return {
        "diff": diff,
        "diff_low": np.atleast_1d(low),
        "diff_high": np.atleast_1d(high),
        "d_z": d_z,
        "d_z_low": d_z_low,
        "d_z_high": d_z_high,
        "p_randomization": randomization_p_values(d, n_resamples=n_resamples, seed=perm_seed),
        "p_t": t_test_p_values(d),
        "wins": wins,
        "ties": n - wins - losses,
        "losses": losses,
        "below_one_question": below_one_question(d),
    }


def format_p(p: float, p_raw: float, n_resamples: int, digits: int = 3) -> str:
    """A p-value as text. When the raw Monte Carlo p sits at its floor 1/(resamples + 1), no resample was as extreme,
    so p (Holm-scaled or not) is only a bound: "< 0.001" below the printed precision, else "≤ bound", never as a
    measured value."""
    if np.isnan(p):
        return "–"
    unit = 10.0 ** -digits
    if p < unit:
        return f"< {unit:.{digits}f}"
    if p_raw <= (1.0 + 1e-9) / (n_resamples + 1):
        return f"≤ {np.ceil(p / unit - 1e-9) * unit:.{digits}f}"
    return f"{p:.{digits}f}"


def below_one_question(differences: np.ndarray) -> np.ndarray:
    """Per row of [rows, n_queries] paired differences: is the net difference non-zero yet no larger than one question's
    own difference (0 < |sum d| <= max |d_q|, 1e-9 relative slack), i.e. one question alone accounts for it?

    The yardstick is each metric's own: a P@100 question moves by steps of 0.01, an nDCG one by up to 1. It cannot
    disagree with significance: pairing every sign pattern of the other questions with both signs of the largest
    difference d gives |A + d| or |A - d| >= |d| >= |sum d|, so the exact two-sided randomization p is >= 1/2.
    """
    net, largest = np.abs(differences.sum(axis=1)), np.abs(differences).max(axis=1)
    return (net > TIE_TOLERANCE) & (net <= largest * (1.0 + 1e-9))


def method_pairs(methods: list[str], baseline: str | None) -> list[tuple[str, str, bool]]:
    """(method_a, method_b, is_baseline_pair): baseline-vs-others first, then other pairs in column order."""
    if baseline is None:
        return [(x, y, False) for x, y in itertools.combinations(methods, 2)]
    others = [m for m in methods if m != baseline]
    return [(baseline, m, True) for m in others] + [(x, y, False) for x, y in itertools.combinations(others, 2)]
