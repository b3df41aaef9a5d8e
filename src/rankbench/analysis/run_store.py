"""The run store, every run remembered: one compact Parquet record per completed run of a question-set version, in
`results/<dataset>/<qset>/runs-history/`, with each method's per-question values on the recorded metrics. It is what
`rankbench runs`, `diff-runs`, `gate` and the MLflow export read (the pages' headline-only JSONL is
analysis/headline_history.py).

A record is written first as a pending file (no id, no date) by the run, then stored under the folder's lock with a
time-ordered id: the file is written to a temporary name and renamed, so a run killed while recording leaves the
history as it was (its temporary file is swept by the next store). Storing is idempotent: a record whose content
equals the latest stored one adds nothing."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rankbench.analysis.headline_history import locked
from rankbench.analysis.qset_diff import FIELDS, labels_text
from rankbench.errors import InputError
from rankbench.io.files import sweep_temporaries, write_atomically, write_text
from rankbench.io.markdown import natural_key

RUNS_FOLDER = "runs-history"
PIN_FILE = "pinned.json"
META_KEY = b"rankbench.run"
VALUE_COLUMNS = ["method", "metric", "k", "qid", "value"]
_RUN_FILE = re.compile(r"^(\d{8}T\d{6}Z)-(\d{4,})\.parquet$")


@dataclass(frozen=True)
class StoredRun:
    """A stored run: its id, sequence number, file and metadata (the values are read on demand)."""

    run_id: str
    number: int
    path: Path
    meta: dict[str, Any]

    def values(self) -> pd.DataFrame:
        """Per-question values: method, metric, k, qid, value."""
        return pd.read_parquet(self.path)


def metric_key(metric: str, k: int) -> str:
    """`ndcg@10`, or the bare name of a metric without a cut-off (`map`)."""
    return f"{metric}@{k}" if k else metric


def per_question_values(metrics: Mapping[str, pd.DataFrame], recorded: Sequence[Sequence], grain: str) -> pd.DataFrame:
    """Each method's per-question values (its metrics/<method>.parquet) on the recorded (metric, k), at the grain."""
    wanted = pd.DataFrame([(m, int(k)) for m, k in recorded], columns=["metric", "k"]).drop_duplicates()
    frames = []
    for method in sorted(metrics):
        frame = metrics[method]
        frame = frame[frame["grain"] == grain].astype({"k": "int64"}).merge(wanted, on=["metric", "k"])
        frames.append(frame[["metric", "k", "qid", "value"]].assign(method=method))
    values = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=VALUE_COLUMNS)
    values = values[VALUE_COLUMNS].astype({"method": str, "metric": str, "k": "int64", "qid": str, "value": "float64"})
    return values.sort_values(["method", "metric", "k", "qid"], ignore_index=True)


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as dotted keys (`methods.bm25.k1`) -> leaf values; lists are leaves."""
    if not isinstance(config, Mapping) or (prefix and not config):
        return {prefix: config}
    flat: dict[str, Any] = {}
    for key in sorted(config, key=str):
        flat.update(flatten(config[key], f"{prefix}.{key}" if prefix else str(key)))
    return flat


def config_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The dotted keys whose value differs between two effective configs (absent: None), sorted by key. A block
    present on one side only (a method added, e.g. one more grid point) is one change of its own key, to or from
    the whole block, not one per setting in it."""
    if before is None:
        return []
    return _block_changes(before, after, "")


def _block_changes(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        name = f"{prefix}.{key}" if prefix else str(key)
        before, after = old.get(key), new.get(key)
        if isinstance(before, Mapping) and isinstance(after, Mapping) and before and after:
            changes += _block_changes(before, after, name)
        elif before != after:
            changes.append({"key": name, "before": before, "after": after})
    return changes


# What a question can change between two runs of a version, in the order they are told; `fields` are its kind,
# audience and as_of.
QUESTION_CHANGES = ("text", "labels", "fields", "added", "removed")


def _short_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def question_fingerprints(questions: pd.DataFrame, labels: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Per question (qid): short sha256 of its text, of its other fields and of its labels. A run record keeps them,
    so a later run names the questions whose text or labels changed (the version's sha256 only says that some did)."""
    label_lines = labels_text(labels.astype({"qid": str})) if len(labels) else pd.Series(dtype=str)
    prints = {}
    for row in questions.astype({"qid": str}).to_dict("records"):
        fields = json.dumps([None if pd.isna(row.get(f)) else str(row.get(f)) for f in FIELDS[1:]])
        prints[row["qid"]] = {"text": _short_sha256(str(row["question"])), "fields": _short_sha256(fields),
                              "labels": _short_sha256(label_lines.get(row["qid"], ""))}
    return dict(sorted(prints.items()))


def question_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, list[str]] | None:
    """The questions whose text, labels or fields changed, were added or removed between two run records (QUESTION_
    CHANGES -> qids in natural order; all empty when both used the same question set); None when the question set
    changed but a record predates the fingerprints, so the questions cannot be named."""
    changes: dict[str, list[str]] = {name: [] for name in QUESTION_CHANGES}
    if before.get("qset_sha256") == after.get("qset_sha256"):
        return changes
    old, new = before.get("questions"), after.get("questions")
    if old is None or new is None:
        return None
    changes["added"] = sorted(set(new) - set(old), key=natural_key)
    changes["removed"] = sorted(set(old) - set(new), key=natural_key)
    for qid in sorted(set(old) & set(new), key=natural_key):
        for name in ("text", "labels", "fields"):
            if old[qid][name] != new[qid][name]:
                changes[name].append(qid)
    return changes


def content_sha256(values: pd.DataFrame, meta: Mapping[str, Any]) -> str:
    """sha256 of what a run produced and was told (values, config, methods, note), not of when it ran."""
    digest = hashlib.sha256(json.dumps({k: meta[k] for k in sorted(meta) if k in _CONTENT_KEYS}, sort_keys=True,
                                       default=str).encode("utf-8"))
    digest.update(pd.util.hash_pandas_object(values, index=False).to_numpy().tobytes())
    return digest.hexdigest()


_CONTENT_KEYS = ("dataset", "qset", "qset_sha256", "config_sha256", "config", "methods", "label", "note",
                 "recorded", "grain", "draft")


def write_record(values: pd.DataFrame, meta: Mapping[str, Any], path: str | Path) -> None:
    """A record as Parquet (zstd) with its metadata as JSON in the file's schema, written atomically."""
    table = pa.Table.from_pandas(values[VALUE_COLUMNS], preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           META_KEY: json.dumps(dict(meta), sort_keys=True, default=str)})
    write_atomically(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def read_meta(path: str | Path) -> dict[str, Any]:
    """The metadata of a record file (one clear error when it is not one)."""
    try:
        metadata = pq.read_schema(path).metadata or {}
        return json.loads(metadata[META_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowException):
        raise InputError(path, None, "is not a rankbench run record",
                         "The runs history is append-only: restore the file or delete it.") from None


def stored_runs(folder: str | Path) -> list[StoredRun]:
    """The stored runs of a version, oldest first (temporary files of an interrupted store are ignored)."""
    folder = Path(folder)
    runs = []
    for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
        match = _RUN_FILE.match(path.name)
        if match:
            runs.append(StoredRun(path.stem, int(match.group(2)), path, read_meta(path)))
    return sorted(runs, key=lambda run: run.number)


def previous_run(folder: str | Path, content: str) -> StoredRun | None:
    """The latest stored run that is not this content (a rerun of a stored run compares with the one before)."""
    return next((run for run in reversed(stored_runs(folder)) if run.meta["content_sha256"] != content), None)


def store_run(folder: str | Path, pending: str | Path, stamp: str) -> str | None:
    """Store a pending record with the next id (`<stamp>-<number>`, stamp YYYYmmddTHHMMSSZ, never before the
    latest's), the config changes against the latest stored run; None when it equals the latest (nothing new)."""
    folder = Path(folder)
    with locked(folder / ".lock"):
        sweep_temporaries(folder)  # of a store killed half-way: under the lock, no writer is alive
        runs = stored_runs(folder)
        meta, values = read_meta(pending), pd.read_parquet(pending)
        latest = runs[-1] if runs else None
        if latest is not None and latest.meta["content_sha256"] == meta["content_sha256"]:
            return None
        stamp = max(stamp, latest.run_id.split("-")[0]) if latest else stamp
        number = latest.number + 1 if latest else 1
        run_id = f"{stamp}-{number:04d}"
        meta = {**meta, "run_id": run_id, "date": f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:"
                f"{stamp[11:13]}:{stamp[13:15]}Z", "previous_run": latest.run_id if latest else None,
                "config_changes": config_changes(latest.meta["config"] if latest else None, meta["config"])}
        write_record(values, meta, folder / f"{run_id}.parquet")
        return run_id


def find_run(runs: Sequence[StoredRun], given: str, source: str) -> StoredRun:
    """A run by id, unique id prefix, sequence number, or `last` / `last~N` (N runs before the last)."""
    if not runs:
        raise InputError(source, None, "holds no recorded run", "Run the workflow first (`snakemake --cores 2`).")
    if given == "last" or given.startswith("last~"):
        back = int(given[5:] or 0) if given[5:].isdigit() or given == "last" else -1
        if 0 <= back < len(runs):
            return runs[-1 - back]
    numbered = [run for run in runs if given.isdigit() and run.number == int(given)]
    matches = numbered or [run for run in runs if run.run_id.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    raise InputError(source, given, "names no run" if not matches else "names several runs",
                     f"Give a run id (`rankbench runs` lists them: {', '.join(r.run_id for r in runs[-3:])}), its "
                     "number, or last / last~1.")


def pin_run(folder: str | Path, run: StoredRun) -> Path:
    """Record a run as the gate's pinned reference (runs-history/pinned.json)."""
    path = Path(folder) / PIN_FILE
    write_text(json.dumps({"run": run.run_id}) + "\n", path)
    return path


def pinned_run(folder: str | Path, runs: Sequence[StoredRun]) -> StoredRun:
    """The pinned reference run (one clear error when none is pinned)."""
    path = Path(folder) / PIN_FILE
    if not path.exists():
        raise InputError(path, None, "does not exist: no run is pinned", "Pin one with `rankbench gate --pin RUN`.")
    return find_run(runs, json.loads(path.read_text(encoding="utf-8"))["run"], str(path))


def headline_means(values: pd.DataFrame, metric: str, k: int) -> pd.Series:
    """Each method's mean of one metric in a run's values, by method."""
    rows = values[(values["metric"] == metric) & (values["k"] == k)]
    return rows.groupby("method", sort=True)["value"].mean()
