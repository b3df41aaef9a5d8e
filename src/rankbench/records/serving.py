"""Costs as served: the serving table of one question-set version (`serving.parquet`), one row per method, from the
serving probe (workflow/scripts/serve_probe.py) or, for a method whose query path the probe cannot run, from the
latencies its run recorded.

The probe times each sampled question alone (no cache), so a percentile here is what one user waits; its 95% CI is
a percentile bootstrap over the questions (seeded). Timings differ from run to run: only the cost page reads this
table, never the comparison page.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.errors import InputError
from rankbench.evaluation.stats import sorted_percentiles

PERCENTILES = (50, 95, 99)
SERVING_COLUMNS = ["method", *[f"p{p}_ms{part}" for p in PERCENTILES for part in ("", "_low", "_high")],
                   "qps_batch", "startup_s", "ram_bytes", "disk_bytes", "dimensions", "questions_timed", "threads",
                   "tokens_per_query", "requests_per_query", "usd_per_1k", "measured"]
# Filled by the footprint of each method (records/footprint.py: bytes loaded to answer, dimensions searched, what it
# sends to remote models per query and money per 1,000 queries).
FOOTPRINT_COLUMNS = ["ram_bytes", "disk_bytes", "dimensions", "tokens_per_query", "requests_per_query", "usd_per_1k"]
MEASURED = ("probe", "recorded")
# A `--quick` run probes at most this many questions.
QUICK_PROBE_QUESTIONS = 20
PROBE_RESAMPLES = 2000


def probe_sample(qids: Sequence[str], wanted: int, seed: int) -> list[str]:
    """The questions the probe times, in the seeded order it sends them: `wanted` of them (all when fewer)."""
    order = np.random.default_rng(seed).permutation(len(qids))
    return [str(qids[i]) for i in order[:wanted]]


def probe_count(settings: Mapping[str, Any], questions: int, quick: bool) -> int:
    """How many questions the probe times: `cost.probe_questions` (every question when the version has fewer; at most
    QUICK_PROBE_QUESTIONS in a quick run)."""
    wanted = int(settings["probe_questions"])
    return min(wanted, questions, QUICK_PROBE_QUESTIONS) if quick else min(wanted, questions)


def percentiles_with_ci(seconds: Sequence[float], seed: int, resamples: int = PROBE_RESAMPLES,
                        confidence: float = 0.95) -> dict[str, float]:
    """p50/p95/p99 of per-question seconds, in ms, each with its percentile-bootstrap CI over the questions
    (`p95_ms`, `p95_ms_low`, `p95_ms_high`, ...); NaN for no question, the point itself for one."""
    values = np.asarray(seconds, dtype=np.float64) * 1000.0
    out: dict[str, float] = {}
    if len(values) == 0:
        return {f"p{p}_ms{part}": np.nan for p in PERCENTILES for part in ("", "_low", "_high")}
    point = np.percentile(values, PERCENTILES)
    draws = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    resampled = np.sort(values[draws], axis=1)
    per_draw = sorted_percentiles(resampled, PERCENTILES)  # one array of `resamples` values per percentile
    alpha = (1.0 - confidence) / 2.0
    for p, value, draw in zip(PERCENTILES, point, per_draw):
        low, high = np.quantile(draw, [alpha, 1.0 - alpha])
        out.update({f"p{p}_ms": float(value), f"p{p}_ms_low": float(low), f"p{p}_ms_high": float(high)})
    return out


def serving_row(method: str, seconds: Sequence[float], batch_seconds: float, startup_s: float, threads: int,
                measured: str, seed: int) -> dict[str, Any]:
    """One method's row: latency percentiles with CIs, questions per second of the same questions as one batch
    (NaN when no batch was timed), start-up seconds; the footprint columns null (with_footprint fills them)."""
    if measured not in MEASURED:
        raise ValueError(f"measured is {measured!r}; use one of {MEASURED}")
    qps = len(seconds) / batch_seconds if len(seconds) and batch_seconds > 0 else np.nan
    return {"method": method, **percentiles_with_ci(seconds, seed), "qps_batch": qps, "startup_s": startup_s,
            **dict.fromkeys(FOOTPRINT_COLUMNS, pd.NA), "questions_timed": len(seconds), "threads": threads,
            "measured": measured}


def serving_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """SERVING_COLUMNS, one row per method (sorted), typed: the footprint columns nullable."""
    table = pd.DataFrame(list(rows), columns=SERVING_COLUMNS).sort_values("method").reset_index(drop=True)
    for column in ("ram_bytes", "disk_bytes", "dimensions"):
        table[column] = table[column].astype("Int64")
    for column in ("tokens_per_query", "requests_per_query", "usd_per_1k"):
        table[column] = table[column].astype("Float64")
    table["questions_timed"] = table["questions_timed"].astype("int64")
    table["threads"] = table["threads"].astype("int64")
    return table


def with_footprint(serving: pd.DataFrame, footprint: pd.DataFrame | None) -> pd.DataFrame:
    """The serving table with FOOTPRINT_COLUMNS taken from `footprint` (method + those columns, one row per method;
    records/footprint.py's method_footprint rows); a method it lacks keeps nulls. None: unchanged."""
    if footprint is None:
        return serving
    given = footprint.set_index("method")
    missing = [column for column in FOOTPRINT_COLUMNS if column not in given]
    if missing:
        raise ValueError(f"the footprint frame lacks {', '.join(missing)}")
    table = serving.copy()
    for column in FOOTPRINT_COLUMNS:
        table[column] = table["method"].map(given[column]).astype(table[column].dtype)
    return table[SERVING_COLUMNS]


def recorded_seconds(records: Sequence[Mapping[str, Any]], qids: Sequence[str]) -> list[float]:
    """Per-question seconds of a method's path from its query-side jobs' timing records (records/timing.py): for each
    sampled question (in order) that every record timed, the sum of their seconds for it. A question one of them
    answered from a cache is left out: its path was not timed whole."""
    timed = [record.get("questions", {}) for record in records]
    if not timed:
        return []
    return [float(sum(questions[qid] for questions in timed)) for qid in qids
            if all(qid in questions for questions in timed)]


def machine() -> dict[str, Any]:
    """The machine the probe ran on: its CPU model (from /proc/cpuinfo, else the platform's name) and cores."""
    import platform

    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpu": model, "cores": os.cpu_count() or 1}


def read_serving(path: str | Path) -> pd.DataFrame:
    """A serving table written by the probe; one missing a column is refused (rerun the probe)."""
    try:
        table = pd.read_parquet(path)
    except (OSError, ValueError) as error:
        raise InputError(path, None, f"is not a serving table ({error})",
                         "Delete it and rerun the workflow (rule serve_probe).") from None
    missing = [column for column in SERVING_COLUMNS if column not in table]
    if missing:
        raise InputError(path, None, f"lacks the columns {', '.join(missing)}",
                         "Delete it and rerun the workflow (rule serve_probe).")
    return table
