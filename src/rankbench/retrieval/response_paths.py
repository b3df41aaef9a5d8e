"""A small path selector into a JSON answer (`hits.hits[*]._id`): how a search endpoint's response maps to ids and
scores, without a JSONPath library. Grammar: steps separated by dots, each a key (letters, digits, `_`, `-`, `@`,
`$`), optionally followed by `[*]` (every element of a list) or `[N]` (element N, from 0); a path starts with a key
or with `[*]` (the answer itself is the list)."""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(r"(?P<key>[A-Za-z0-9_@$-]+)?(?P<index>(\[(\*|\d+)\])*)")
_INDEX = re.compile(r"\[(\*|\d+)\]")
ALL = "*"


class PathError(ValueError):
    """A selector that does not parse, or that does not reach a value in a response."""


def parse_path(path: str) -> list[str | int]:
    """A selector's steps: key names (str), list positions (int) and ALL."""
    steps: list[str | int] = []
    for part in path.split("."):
        match = _STEP.fullmatch(part)
        if not part or not match or not (match["key"] or match["index"]) or (match["key"] is None and steps):
            raise PathError(f"{path!r} is no path: write keys separated by dots, a list's elements as `[*]` (all) or "
                            "`[N]`, e.g. hits.hits[*]._id")
        if match["key"]:
            steps.append(match["key"])
        steps += [ALL if index == ALL else int(index) for index in _INDEX.findall(match["index"])]
    if steps.count(ALL) != 1:
        raise PathError(f"{path!r} has {steps.count(ALL)} `[*]`; it needs exactly one, at the list of hits")
    return steps


def select(document: Any, path: str) -> list[Any]:
    """The values the selector reaches, one per element of the list at its `[*]`, in that list's order."""
    steps = parse_path(path)
    cut = steps.index(ALL)
    hits = _walk(document, steps[:cut], path)
    if not isinstance(hits, list):
        raise PathError(f"{path!r}: the value at its `[*]` is {type(hits).__name__}, not a list")
    return [_walk(hit, steps[cut + 1:], path) for hit in hits]


def _walk(value: Any, steps: list[str | int], path: str) -> Any:
    for step in steps:
        in_list = isinstance(step, int) and isinstance(value, list) and step < len(value)
        if not (in_list or (isinstance(step, str) and isinstance(value, dict) and step in value)):
            raise PathError(f"{path!r}: the response has no {step!r} where the path expects it")
        value = value[step]
    return value
