"""argparse types for the commands' numeric options: each value is checked (a finite number, in its range) while
the arguments are read, so a bad one is a usage error (exit 2) naming the option, before any work. `nan` compares
false with everything, so an unchecked `--alpha nan` would turn a test into a permanent pass."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def whole_number(minimum: int = 0) -> Callable[[str], int]:
    """An argparse type: a whole number >= minimum (written in ASCII digits, e.g. 10000)."""
    def read(text: str) -> int:
        digits = text.strip().lstrip("+")
        if not (digits.isascii() and digits.isdigit()) or int(digits) < minimum:  # "²".isdigit(), not int("²")
            raise argparse.ArgumentTypeError(f"must be a whole number >= {minimum}, got {text!r}")
        return int(digits)
    return read


def finite_number(low: float, high: float = math.inf, *, open_low: bool = False,
                  open_high: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from `low` to `high` (each end excluded when open)."""
    span = (f"{'above' if open_low else 'at least'} {low:g}" if high == math.inf else
            f"{'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}")

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        inside = (value > low if open_low else value >= low) and (value < high if open_high else value <= high)
        if not (math.isfinite(value) and inside):
            raise argparse.ArgumentTypeError(f"must be a finite number {'in ' if high != math.inf else ''}{span}, "
                                             f"got {text!r}")
        return value + 0.0  # -0 is 0 (said "the tolerance -0")
    return read
