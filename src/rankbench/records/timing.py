"""The timing record of a job that answers questions: seconds of query-side work per question, apart from the job's
one-time costs (start-up, loading, compiling), and the LLM/API calls and tokens it paid; the cost page reads it.

Every job script that answers questions (retrieval, rerank, fusion, query encoding, and any new method type) uses
it the same way::

    timing = Timing()
    with timing.once("load"):                      # one-time work: load an index or a model, compile a kernel
        index = load_index(path)
    results = timing.each(qids, lambda i: answer(i))   # question i's work alone, timed one question at a time
    with timing.batch(qids):                       # or: work done for all questions at once (its mean per question)
        results = answer_all()
    timing.cached(qids)                            # questions answered from a cache: no work, counted apart
    timing.took(qid, seconds)                      # a question's work timed by the caller (a concurrent request)
    timing.count(calls=1, tokens=120)              # per LLM/API request sent (tokens None: the server reported none)
    timing.write(snakemake.output.timing)

The record lives where the rule's benchmark file does, under `timings/` instead of `benchmarks/` and ending in
`.json` (`timing_path`); declare it as the rule's `timing` output. Its JSON: `questions` (qid -> seconds),
`batched` (true when any of them is a batch's mean), `cached` (questions answered from a cache, 0 seconds each),
`once` (label -> seconds), `calls` and `tokens`. Timings differ
from run to run; nothing but the cost page reads them, so every other page stays byte-identical.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rankbench.errors import InputError
from rankbench.io.files import write_text

T = TypeVar("T")


class Timing:
    """Seconds per question and one-time seconds of one job, with the calls and tokens it sent."""

    def __init__(self) -> None:
        self.questions: dict[str, float] = {}
        self.onetime: dict[str, float] = {}
        self.batched = False
        self.from_cache = 0
        self.calls = 0
        self.tokens: int | None = 0

    @contextmanager
    def once(self, label: str) -> Iterator[None]:
        """Time a one-time cost (loading, compiling, a warm-up call) under `label`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.onetime[label] = self.onetime.get(label, 0.0) + time.perf_counter() - start

    def each(self, qids: Sequence[str], answer: Callable[[int], T]) -> list[T]:
        """answer(i) for every question i, in order, each timed alone under qids[i]."""
        results = []
        for position, qid in enumerate(qids):
            start = time.perf_counter()
            results.append(answer(position))
            self._add(qid, time.perf_counter() - start)
        return results

    @contextmanager
    def batch(self, qids: Sequence[str]) -> Iterator[None]:
        """Time work done for all these questions at once: each is charged the batch's mean (none: not recorded)."""
        start = time.perf_counter()
        yield
        elapsed = time.perf_counter() - start
        if not qids:
            return
        for qid in qids:
            self._add(qid, elapsed / len(qids))
        self.batched = True

    def cached(self, qids: Sequence[str]) -> None:
        """Questions whose answer came from a cache (an earlier run or version did the work): 0 seconds each."""
        for qid in qids:
            self._add(qid, 0.0)
        self.from_cache += len(qids)

    def took(self, qid: str, seconds: float) -> None:
        """Add a question's work timed by the caller, e.g. its round trip when requests are sent concurrently."""
        self._add(qid, seconds)

    def count(self, calls: int = 1, tokens: int | None = 0) -> None:
        """Add requests sent to an LLM or API and the tokens billed (None: unreported, so the total is unknown)."""
        self.calls += calls
        self.tokens = None if tokens is None or self.tokens is None else self.tokens + tokens

    def record(self) -> dict[str, Any]:
        """The JSON record (see the module docstring)."""
        return {"questions": self.questions, "batched": self.batched, "cached": self.from_cache, "once": self.onetime,
                "calls": self.calls, "tokens": self.tokens}

    def write(self, path: str | Path) -> None:
        """Write the record (JSON) to the rule's `timing` output."""
        write_text(json.dumps(self.record(), sort_keys=True), path)

    def _add(self, qid: str, seconds: float) -> None:
        self.questions[qid] = self.questions.get(qid, 0.0) + seconds


def timing_path(benchmark: str) -> str:
    """Where the job whose benchmark file is `benchmark` writes its timing record."""
    head, _, tail = benchmark.rpartition("benchmarks/")
    return f"{head}timings/{tail.removesuffix('.tsv')}.json"


def read_timing(path: str | Path) -> dict[str, Any]:
    """A timing record, checked: one clear error for a file that is not one."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(record["questions"], dict) or not isinstance(record["once"], dict):
            raise TypeError("questions and once must be objects")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(path, None, f"is not a timing record ({error})",
                         "Delete it and rerun the rule that writes it.") from None
    return record
