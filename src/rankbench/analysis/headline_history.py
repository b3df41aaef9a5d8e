"""The headline history: one record per (question-set version, method) of every complete run, its headline figures
only, appended to results/history.jsonl (the pages' history table and plot) only when it differs from that method's
latest record (a no-op rerun adds nothing). The full per-question memory that `rankbench runs`, `diff-runs`, `gate`
and the MLflow export read is the run store, analysis/run_store.py.

The file is shared by every dataset and config writing to the results folder, so each update holds an exclusive
lock; recording is idempotent, so a job killed half-way is simply run again."""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.io.files import write_jsonl

KEY = ("dataset", "qset", "method")


def run_records(aggregate: pd.DataFrame, manifest: Mapping[str, Any], dataset: str, config_sha256: str,
                experiment: Mapping[str, str], headline: Sequence[Sequence], grain: str,
                models: Mapping[str, Mapping[str, Any]] | None = None,
                method_models: Mapping[str, Sequence[str]] | None = None,
                software: Mapping[str, str] | None = None, commit: str | None = None,
                draft: bool = False) -> list[dict[str, Any]]:
    """One record per method of one version: provenance, experiment label and note, headline metrics (no date).

    models: config key -> {model, revision, weights_sha256} (or an engine's {engine, facts}); method_models: method ->
    the keys its run depends on (a method without models records none); software: package -> version (rankbench and
    its main dependencies); commit: the git commit of rankbench's source (None off a checkout: the version names the
    wheel); draft: the version is a draft, not frozen (recorded as `draft: true`; a record without it is frozen)."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS)]
    rows = rows.set_index(["method", "metric", "k"])
    records = []
    for method in sorted(aggregate["method"].unique()):
        metrics = {f"{m}@{k}": round(float(rows.loc[(method, m, k), "mean"]), 6)
                   for m, k in headline if (method, m, k) in rows.index}
        record = {"dataset": dataset, "qset": manifest["version"], "qset_sha256": manifest["sha256"],
                  "config_sha256": config_sha256, "label": experiment.get("label"), "note": experiment.get("note"),
                  "method": method, "grain": grain, "metrics": metrics}
        used = (method_models or {}).get(method, [])
        if models and used:
            record["models"] = {key: dict(models[key]) for key in used}
        if software:
            record["software"] = dict(software)
        if commit:
            record["commit"] = commit
        if draft:
            record["draft"] = True
        records.append(record)
    return records


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a history file (none when it does not exist yet)."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    # Records end at "\n" only: a note may hold U+2028 and the like, which str.splitlines() would break at.
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            raise InputError(path, f"line {number}", "is not a JSON record",
                             "The history is append-only: restore the line or delete it.") from None
    return records


@contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on `<path>.lock` (blocking), so concurrent runs update the history one at a time."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f"{path.name}.lock"), "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _content(record: Mapping[str, Any]) -> str:
    """A record without date and run, as canonical JSON (so NaN equals NaN)."""
    return json.dumps({k: v for k, v in record.items() if k not in ("date", "run")}, ensure_ascii=False,
                      sort_keys=True)


def _append(path: str | Path, records: Sequence[Mapping[str, Any]], date: str) -> int:
    """Append the records that differ (apart from date and run) from their method's latest one; return how many. The
    caller holds the history's lock; the file is rewritten atomically, old lines unchanged and the new ones after."""
    history = read_history(path)
    latest = {tuple(r[k] for k in KEY): _content(r) for r in history}
    new = [dict(record) for record in records if latest.get(tuple(record[k] for k in KEY)) != _content(record)]
    if new:
        run = max((r.get("run", 0) for r in history), default=0) + 1
        write_jsonl(history + [{"date": date, "run": run, **r} for r in new], path, sort_keys=True)
    return len(new)


def history_frame(records: Sequence[Mapping[str, Any]], dataset: str) -> pd.DataFrame:
    """One row per record of a dataset, its metrics as columns."""
    rows = [{**{k: v for k, v in r.items() if k != "metrics"}, **r["metrics"]} for r in records
            if r["dataset"] == dataset]
    return pd.DataFrame(rows).fillna({"label": "", "note": ""}) if rows else pd.DataFrame()


def record_run(record_paths: Sequence[str], history_path: str | Path, dataset: str, metric: str, date: str,
               draw: Callable[[pd.DataFrame, str], None]) -> int:
    """Append the records of every version of a complete run to the history, then redraw the dataset's pages.

    Idempotent (a record equal to its method's latest is not appended again), so a job killed half-way is simply
    run again by the next run; returns how many records were added. `draw(frame, metric)` writes the table and plot.
    """
    records = [record for path in record_paths for record in json.loads(Path(path).read_text(encoding="utf-8"))]
    with locked(history_path):
        added = _append(history_path, records, date)
        frame = history_frame(read_history(history_path), dataset)
        frame = frame if metric in frame else frame.assign(**{metric: float("nan")})  # older records lack it
        draw(frame, metric)
    return added
