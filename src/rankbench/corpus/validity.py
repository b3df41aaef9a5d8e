"""Validity dates: whether a document is in force on the date a question is asked."""

from __future__ import annotations

import pandas as pd


def in_force(valid_from: pd.Series, valid_to: pd.Series, as_of: pd.Series) -> pd.Series:
    """Whether a document is valid at a date: valid_from <= as_of < valid_to, open ends allowed."""
    dated = as_of.notna()
    after_start = valid_from.isna() | (valid_from <= as_of)
    before_end = valid_to.isna() | (as_of < valid_to)
    return ~dated | (after_start & before_end)
