"""The one check of what an encoder returned, before it is cached or used: a NaN, an overflow (1e39 is infinite in
float32) or a zero vector would otherwise become a zero row that scores 0 for every question, without a word."""

from __future__ import annotations

from typing import Any

import numpy as np

from rankbench.errors import InputError

FIX = "The model or server returns broken vectors: check its log, its version and the model it serves."


def checked_vectors(vectors: Any, texts: int, source: str, dimension: int | None = None,
                    zero_rows: bool = False) -> Any:
    """vectors (dense float32 rows, or a sparse matrix) if they hold one row per text, `dimension` columns when given,
    only finite values and, unless `zero_rows`, no all-zero row; else an InputError naming the source and the first
    text at fault (1-based, in the order given)."""
    is_sparse = hasattr(vectors, "tocsr")  # a scipy sparse matrix (scipy is not imported for a dense check)
    if not is_sparse:
        with np.errstate(over="ignore"):  # an overflow becomes inf, refused below
            vectors = np.asarray(vectors, dtype=np.float32)
    shape = vectors.shape
    if len(shape) != 2 or shape[0] != texts:
        raise InputError(source, None, f"returned {shape[0] if shape else 0} vectors for {texts} texts", FIX)
    if texts and not shape[1]:
        raise InputError(source, None, "returned vectors without a dimension", FIX)
    if dimension is not None and shape[1] != dimension:
        raise InputError(source, None, f"returned {shape[1]}-dimensional vectors where {dimension} dimensions are "
                         "expected (those of its other vectors)", FIX + " Its vectors must keep one dimension.")
    if is_sparse:
        bad_values = ~np.isfinite(vectors.data)
        if bad_values.any():
            row = int(np.searchsorted(vectors.tocsr().indptr, np.flatnonzero(bad_values)[0], side="right")) - 1
            raise InputError(source, None, f"returned a vector with a value that is not finite for text {row + 1} "
                             f"of {texts}", FIX)
        return vectors
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise InputError(source, None, f"returned a vector with a value that is not finite (NaN, or beyond float32's "
                         f"range) for text {row + 1} of {texts}", FIX)
    if not zero_rows and shape[1] and len(vectors):
        zero = ~vectors.any(axis=1)
        if zero.any():
            raise InputError(source, None, f"returned an all-zero vector for text {int(np.flatnonzero(zero)[0]) + 1} "
                             f"of {texts}", FIX + " A zero vector matches nothing.")
    return vectors


def check_same_dimension(queries: np.ndarray, passages_dimension: int, queries_source: str,
                         passages_source: str, existing_collection: str | None = None) -> None:
    """Query vectors have the passage vectors' dimension (FAISS would stop on a bare assert, numpy on a shape).
    `existing_collection` is the config key of a collection rankbench did not build (a team's database): the fix
    then never says to delete it."""
    dimension = queries.shape[1] if queries.ndim == 2 else 0
    if dimension != passages_dimension:
        fix = ("Queries and passages must be encoded by one model: check the encoder (an API server may have changed "
               "models between the two jobs), then delete both files to encode them again.")
        if existing_collection:
            fix = (f"The collection was embedded by another model: set the method's `encoder` to the model that built "
                   f"it, or point {existing_collection} at a collection embedded with this encoder (a new collection "
                   "name). Do not delete the collection: rankbench only reads it, and it may be your team's database.")
        raise InputError(queries_source, None, f"holds {dimension}-dimensional query vectors, but the passage vectors "
                         f"of {passages_source} have {passages_dimension} dimensions", fix)
