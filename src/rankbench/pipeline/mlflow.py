"""Export a recorded run to an MLflow tracking server through its REST API (plain HTTP, no mlflow package):
params = the effective config, metrics = each method's headline means, artifacts = the version's pages and tables.
Idempotent: a run already exported (tag rankbench.record: dataset/qset/run id) is not exported again."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rankbench.analysis.runs import StoredRun, flatten, headline_means, metric_key
from rankbench.errors import InputError
from rankbench.io.http import post_json

SETTING = "report.mlflow.tracking_uri"
_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")
_PARAM_CHARS, _BATCH = 6000, 100
TIMEOUT = 30.0


def mlflow_settings(report: Mapping[str, Any], environment_uri: str | None) -> dict[str, str] | None:
    """{tracking_uri, experiment} from `report.mlflow` or MLFLOW_TRACKING_URI (the config wins); None when neither."""
    given = dict(report.get("mlflow") or {})
    uri = given.get("tracking_uri") or environment_uri
    if not uri:
        return None
    return {"tracking_uri": uri.rstrip("/"), "experiment": given.get("experiment", "rankbench")}


def mlflow_key(text: str) -> str:
    """A name MLflow accepts as a param or metric key (letters, digits, _ - . / and space; others become _)."""
    return _KEY.sub("_", text)


def _call(uri: str, endpoint: str, body: Mapping[str, Any] | None = None, query: Mapping[str, str] | None = None
          ) -> dict[str, Any]:
    url = f"{uri}/api/2.0/mlflow/{endpoint}"
    if body is not None:
        return json.loads(post_json(url, body, None, TIMEOUT, 2, 1.0, SETTING) or b"{}")
    try:
        with urllib.request.urlopen(f"{url}?{urllib.parse.urlencode(query or {})}", timeout=TIMEOUT) as response:
            return json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return {}
        raise InputError(SETTING, None, f"{url} answered HTTP {error.code}", "Check the MLflow server.") from None
    except OSError as error:
        raise InputError(SETTING, None, f"cannot reach {url} ({error})",
                         "Start the MLflow server, or unset report.mlflow / MLFLOW_TRACKING_URI.") from None


def _experiment_id(uri: str, name: str) -> str:
    found = _call(uri, "experiments/get-by-name", query={"experiment_name": name})
    if found.get("experiment"):
        return found["experiment"]["experiment_id"]
    return _call(uri, "experiments/create", {"name": name})["experiment_id"]


def _upload(uri: str, artifact_uri: str, path: Path, name: str) -> None:
    """PUT one file through the server's artifact proxy (`mlflow server` serves artifacts by default)."""
    if not artifact_uri.startswith("mlflow-artifacts:/"):
        raise InputError(SETTING, None, f"the server stores artifacts at {artifact_uri}, which rankbench cannot reach "
                         "over HTTP", "Run `mlflow server` with artifact serving (its default).")
    where = artifact_uri.removeprefix("mlflow-artifacts:").lstrip("/")
    request = urllib.request.Request(f"{uri}/api/2.0/mlflow-artifacts/artifacts/{where}/{urllib.parse.quote(name)}",
                                     data=path.read_bytes(), method="PUT")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT):
            pass
    except OSError as error:
        raise InputError(SETTING, None, f"uploading {path} failed ({error})", "Check the MLflow server.") from None


def export_run(settings: Mapping[str, str], run: StoredRun, artifacts: Sequence[str | Path]) -> str:
    """Export one stored run (new MLflow run, or the existing one when already exported); returns its MLflow id."""
    uri = settings["tracking_uri"]
    experiment = _experiment_id(uri, settings["experiment"])
    meta = run.meta
    record = f"{meta['dataset']}/{meta['qset']}/{run.run_id}"  # run ids repeat across versions: all three name it
    existing = _call(uri, "runs/search", {"experiment_ids": [experiment], "max_results": 1,
                                          "filter": f"tags.`rankbench.record` = '{record}'"})
    if existing.get("runs"):
        return existing["runs"][0]["info"]["run_id"]
    tags = {"rankbench.record": record, "rankbench.run_id": run.run_id, "rankbench.dataset": meta["dataset"],
            "rankbench.qset": meta["qset"],
            "rankbench.config_sha256": meta["config_sha256"], "rankbench.version": meta["rankbench_version"],
            "rankbench.commit": meta.get("commit") or "", "mlflow.note.content": meta.get("note") or ""}
    created = _call(uri, "runs/create", {"experiment_id": experiment, "start_time": int(time.time() * 1000),
                                         "run_name": f"{meta['dataset']}-{meta['qset']}-{run.run_id}",
                                         "tags": [{"key": k, "value": v} for k, v in tags.items()]})["run"]["info"]
    params = [{"key": mlflow_key(key)[:250], "value": json.dumps(value, default=str)[:_PARAM_CHARS]
               if not isinstance(value, str) else value[:_PARAM_CHARS]}
              for key, value in flatten(meta["config"]).items()]
    values, stamp = run.values(), int(time.time() * 1000)
    metrics = [{"key": mlflow_key(f"{metric_key(metric, int(k)).replace('@', '_at_')}/{method}"), "value": float(mean),
                "timestamp": stamp, "step": 0}
               for metric, k in meta["headline"] for method, mean in headline_means(values, metric, int(k)).items()]
    for start in range(0, max(len(params), len(metrics)), _BATCH):
        _call(uri, "runs/log-batch", {"run_id": created["run_id"], "params": params[start:start + _BATCH],
                                      "metrics": metrics[start:start + _BATCH]})
    for path in map(Path, artifacts):
        if path.exists():
            _upload(uri, created["artifact_uri"], path, path.name)
    _call(uri, "runs/update", {"run_id": created["run_id"], "status": "FINISHED",
                               "end_time": int(time.time() * 1000)})
    return created["run_id"]
