"""Export recorded runs to an MLflow tracking server through its REST API (rankbench.io.http, no mlflow package), in
MLflow's conventions: one run per recorded run (run name = the experiment label, start time = the run's time, tag
`mlflow.source.git.commit`; params = the effective config, metrics = each method's headline means, artifacts = the
version's pages and tables and the run record) with one nested run per method (tag `mlflow.parentRunId`; its
headline means, its per-question values and, for the run the results folder holds, its TREC runs and ir_metadata).

Exporting is a side effect of a finished evaluation: export_pending sends every stored run the server lacks (a run
whose export broke off half-way is replaced), so a server that was down is caught up with at the next export.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rankbench.analysis.run_store import StoredRun, flatten, headline_means, metric_key
from rankbench.errors import InputError
from rankbench.io.http import send

SETTING = "report.mlflow.tracking_uri"
ENVIRONMENT = "MLFLOW_TRACKING_URI"
# The URI schemes of a tracking server (rankbench speaks its REST API; file and database URIs are no servers).
SERVER_SCHEMES = ("http", "https")
_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")
_PARAM_CHARS, _BATCH, _PAGE = 6000, 100, 1000
TIMEOUT, RETRIES, BACKOFF = 30.0, 2, 1.0
_FIX = "Check that the tracking URI is the MLflow server's root (http://host:port) and the server's log."


def mlflow_settings(report: Mapping[str, Any], environment_uri: str | None) -> dict[str, str] | None:
    """{tracking_uri, experiment} from `report.mlflow` or MLFLOW_TRACKING_URI (the config wins); None when neither.
    A URI holding a user name or password (which pages and logs would show) or not http(s) is an InputError naming
    where it came from: the workflow calls this at start, before any job."""
    given = dict(report.get("mlflow") or {})
    uri = given.get("tracking_uri") or environment_uri
    if not uri:
        return None
    source, where = ("config", SETTING) if given.get("tracking_uri") else ("environment", ENVIRONMENT)
    parts = urllib.parse.urlsplit(uri)
    if "@" in parts.netloc:
        raise InputError(source, where, f"holds a user name or password ({uri})", "Remove them from the URI: "
                         "pages, records and logs show it; rankbench exports to a server without authentication.")
    if parts.scheme not in SERVER_SCHEMES or not parts.netloc:
        raise InputError(source, where, f"is not an http(s) URL ({uri!r})",
                         "Give the MLflow server's address, e.g. http://127.0.0.1:5000 (rankbench exports over its "
                         "REST API; file and database URIs are not servers).")
    return {"tracking_uri": uri.rstrip("/"), "experiment": given.get("experiment", "rankbench")}


def mlflow_key(text: str) -> str:
    """A name MLflow accepts as a param or metric key (letters, digits, _ - . / and space; others become _)."""
    return _KEY.sub("_", text)


def _call(uri: str, endpoint: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """POST one REST call; an answer that is not a JSON object (a web page at that address, a proxy's login page)
    is an InputError naming the URL and what came back."""
    url = f"{uri}/api/2.0/mlflow/{endpoint}"
    payload, headers = send(url, json.dumps(body).encode("utf-8"), {"Content-Type": "application/json"}, "POST",
                            TIMEOUT, RETRIES, BACKOFF, "report.mlflow", _FIX, url_key="tracking_uri")
    try:
        answer = json.loads(payload or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        answer = None
    if not isinstance(answer, dict):
        kind = headers.get("Content-Type") or "no content type"
        excerpt = payload[:80].decode("utf-8", "replace").strip()
        raise InputError(url, None, f"answered {kind}, not MLflow's JSON ({excerpt!r}): no MLflow tracking server "
                         "answers there", _FIX)
    return answer


def _experiment_id(uri: str, name: str) -> str:
    quoted = name.replace("'", "\\'")
    found = _call(uri, "experiments/search", {"filter": f"name = '{quoted}'", "max_results": 1})
    if found.get("experiments"):
        return str(found["experiments"][0]["experiment_id"])
    return str(_call(uri, "experiments/create", {"name": name})["experiment_id"])


def _upload(uri: str, artifact_uri: str, data: bytes, name: str) -> None:
    """PUT one file through the server's artifact proxy (`mlflow server` serves artifacts by default)."""
    if not artifact_uri.startswith("mlflow-artifacts:/"):
        raise InputError(SETTING, None, f"the server stores artifacts at {artifact_uri}, which rankbench cannot reach "
                         "over HTTP", "Run `mlflow server` with artifact serving (its default).")
    where = artifact_uri.removeprefix("mlflow-artifacts:").lstrip("/")
    send(f"{uri}/api/2.0/mlflow-artifacts/artifacts/{where}/{urllib.parse.quote(name)}", data,
         {"Content-Type": "application/octet-stream"}, "PUT", TIMEOUT, RETRIES, BACKOFF, "report.mlflow", _FIX,
         url_key="tracking_uri")


def run_time_ms(run: StoredRun) -> int:
    """The run's time (its id's stamp, YYYYmmddTHHMMSSZ, UTC) in milliseconds since the epoch."""
    stamp = datetime.strptime(run.run_id.split("-")[0], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    return int(stamp.timestamp() * 1000)


def record_name(run: StoredRun) -> str:
    """The tag value naming a stored run among all versions (run ids repeat across versions)."""
    return f"{run.meta['dataset']}/{run.meta['qset']}/{run.run_id}"


def exported_records(uri: str, experiment: str, dataset: str, qset: str) -> dict[str, tuple[str, str]]:
    """{record: (MLflow run id, status)} of this version's parent runs on the server."""
    found: dict[str, tuple[str, str]] = {}
    token = None
    while True:
        body: dict[str, Any] = {"experiment_ids": [experiment], "max_results": _PAGE,
                                "filter": f"tags.`rankbench.dataset` = '{dataset}' and tags.`rankbench.qset` = "
                                          f"'{qset}'"}
        page = _call(uri, "runs/search", body | ({"page_token": token} if token else {}))
        for listed in page.get("runs", []):
            tags = {tag["key"]: tag["value"] for tag in listed.get("data", {}).get("tags", [])}
            if "rankbench.record" in tags:
                found[tags["rankbench.record"]] = (listed["info"]["run_id"], listed["info"]["status"])
        token = page.get("next_page_token")
        if not token:
            return found


def _log(uri: str, run_id: str, params: Sequence[Mapping[str, str]], metrics: Sequence[Mapping[str, Any]]) -> None:
    for start in range(0, max(len(params), len(metrics)), _BATCH):
        _call(uri, "runs/log-batch", {"run_id": run_id, "params": list(params[start:start + _BATCH]),
                                      "metrics": list(metrics[start:start + _BATCH])})


def _params(config: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"key": mlflow_key(key)[:250], "value": value[:_PARAM_CHARS] if isinstance(value, str)
             else json.dumps(value, default=str)[:_PARAM_CHARS]} for key, value in flatten(config).items()]


def _create(uri: str, experiment: str, name: str, start: int, tags: Mapping[str, str]) -> dict[str, Any]:
    body = {"experiment_id": experiment, "start_time": start, "run_name": name,
            "tags": [{"key": k, "value": v} for k, v in tags.items() if v]}
    return dict(_call(uri, "runs/create", body)["run"]["info"])


def _finish(uri: str, run_id: str) -> None:
    _call(uri, "runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": int(time.time() * 1000)})


def _export(uri: str, experiment: str, run: StoredRun, artifacts: Sequence[str | Path],
            method_artifacts: Mapping[str, Sequence[str | Path]], done: Mapping[str, tuple[str, str]]) -> str:
    """Export one stored run that the server lacks: a parent run and one nested run per method; returns the parent's
    MLflow id. ``done`` holds the server's runs by record (a run whose export broke off is replaced); ``artifacts``
    go to the parent, ``method_artifacts[method]`` to that method's run (files that do not exist are left out)."""
    meta, record = run.meta, record_name(run)
    if record in done:  # a half export (the server went away), never finished: deleted, sent anew
        _call(uri, "runs/delete", {"run_id": done[record][0]})
    start = run_time_ms(run)
    commit = meta.get("commit") or ""
    tags = {"rankbench.record": record, "rankbench.run_id": run.run_id, "rankbench.dataset": meta["dataset"],
            "rankbench.qset": meta["qset"], "rankbench.config_sha256": meta["config_sha256"],
            "rankbench.version": meta["rankbench_version"], "rankbench.commit": commit,
            "mlflow.source.git.commit": commit, "mlflow.note.content": meta.get("note") or ""}
    parent = _create(uri, experiment, meta.get("label") or f"{meta['dataset']}-{meta['qset']}-{run.run_id}", start,
                     tags)
    values, stamp = run.values(), int(time.time() * 1000)
    means = {(metric, int(k)): headline_means(values, metric, int(k)) for metric, k in meta["headline"]}
    _log(uri, parent["run_id"], _params(meta["config"]),
         [{"key": mlflow_key(f"{metric_key(metric, k).replace('@', '_at_')}/{method}"), "value": float(mean),
           "timestamp": stamp, "step": 0} for (metric, k), by_method in means.items()
          for method, mean in by_method.items()])
    for path in map(Path, artifacts):
        if path.exists():
            _upload(uri, parent["artifact_uri"], path.read_bytes(), path.name)
    for method in sorted(set(values["method"])):
        child = _create(uri, experiment, method, start, {"mlflow.parentRunId": parent["run_id"],
                                                         "rankbench.method": method, "rankbench.run_id": run.run_id,
                                                         "mlflow.source.git.commit": commit})
        _log(uri, child["run_id"], _params(meta.get("methods", {}).get(method, {})),
             [{"key": mlflow_key(metric_key(metric, k).replace("@", "_at_")), "value": float(by_method[method]),
               "timestamp": stamp, "step": 0} for (metric, k), by_method in means.items() if method in by_method])
        table = values[values["method"] == method].drop(columns="method").reset_index(drop=True)
        _upload(uri, child["artifact_uri"], table.to_parquet(index=False), "per-question.parquet")
        for path in map(Path, method_artifacts.get(method, ())):
            if path.exists():
                _upload(uri, child["artifact_uri"], path.read_bytes(), path.name)
        _finish(uri, child["run_id"])
    _finish(uri, parent["run_id"])
    return str(parent["run_id"])


def export_pending(settings: Mapping[str, str], runs: Sequence[StoredRun], artifacts: Sequence[str | Path],
                   method_artifacts: Mapping[str, Sequence[str | Path]]) -> list[str]:
    """Export every stored run of one version that the server lacks, oldest first (the results folder's files,
    ``artifacts`` and ``method_artifacts``, go with the latest run only: they are its results); the MLflow ids of
    the runs sent now."""
    if not runs:
        return []
    uri = settings["tracking_uri"]
    experiment = _experiment_id(uri, settings["experiment"])
    done = exported_records(uri, experiment, runs[0].meta["dataset"], runs[0].meta["qset"])
    sent = []
    for run in runs:
        if done.get(record_name(run), ("", ""))[1] == "FINISHED":  # exported: never twice
            continue
        latest = run is runs[-1]
        sent.append(_export(uri, experiment, run, artifacts if latest else [run.path],
                            method_artifacts if latest else {}, done))
    return sent


def export_version(settings: Mapping[str, str], folder: Path, runs: Sequence[StoredRun]) -> list[str]:
    """Export a version's stored runs that the server lacks, with the files of its results folder (pages, tables,
    each method's TREC runs and ir_metadata). A side effect of a finished evaluation: a server that is down or
    answers wrongly is a warning, never a failed job, and what it missed is sent at the next export."""
    if not runs:
        return []
    artifacts = [folder / name for name in ("comparison.md", "comparison.html", "aggregate.parquet", "pairs.parquet")]
    method_artifacts = {method: [folder / "runs" / f"{method}.{kind}" for kind in ("docs.trec", "chunks.trec",
                                                                                   "ir_metadata.yaml")]
                        for method in runs[-1].meta.get("methods", {})}
    try:
        sent = export_pending(settings, runs, [*artifacts, runs[-1].path], method_artifacts)
    except InputError as error:
        logging.warning("MLflow export of %s skipped; the results are complete, and the runs it lacks are sent at "
                        "the next export: %s", folder.name, error)
        return []
    logging.info("%s: %d run(s) exported to MLflow (%s)", folder.name, len(sent), ", ".join(sent) or "none pending")
    return sent
