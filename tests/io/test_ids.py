"""ids_in against pandas' own isin, the reference it replaces for speed."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.io.ids import ids_in


def test_ids_in_equals_pandas_isin_for_sets_series_lists_nulls_and_empty_values() -> None:
    rng = np.random.default_rng(0)
    ids = pd.Series([f"d{i}" for i in rng.integers(0, 500, 2000)] + [None, "d#1", "é"], dtype="str")
    chosen = [f"d{i}" for i in rng.integers(0, 500, 200)] + ["é", "absent"]
    for values in (set(chosen), pd.Series(chosen, dtype=object), chosen, [], pd.Series(chosen, dtype="str")):
        expected = ids.isin(values).to_numpy(dtype=bool)
        got = ids_in(ids, values)
        assert got.dtype == bool and (got == expected).all()
    assert ids_in(pd.Series(["a", "b"], dtype=object), ["b"]).tolist() == [False, True]
