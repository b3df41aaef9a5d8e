"""Document expansion in a real run: a frozen file of likely questions appended to the chunks that the BM25 and
dense indexes of the methods naming it are built from; bad or edited files are refused at start."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from llm_server import ChatServer, chat_server, completion
from workflow_helpers import copy_dataset, edit_config, planned_jobs, snakemake

from rankbench.io.expansions import load_expansions
from rankbench.io.frozen import freeze

pytestmark = pytest.mark.slow
server = chat_server
MINI = Path("tests/fixtures/mini")
EXPANSION = MINI / "expansions.doc2q.jsonl"
LINES = [{"doc_id": "delivery", "questions": ["When will my bike arrive?", "How long does shipping take?"]},
         {"doc_id": "subscription", "questions": ["What does the plan cost each month?"]}]
METHODS = {"bm25": {"type": "bm25"}, "bm25-doc2q": {"type": "bm25", "expansion": "doc2q"},
           "dense": {"type": "dense", "encoder": "minilm"},
           "dense-doc2q": {"type": "dense", "encoder": "minilm", "expansion": "doc2q"}}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path_factory.mktemp("expansion"))
    (workdir / EXPANSION).write_text("".join(json.dumps(line) + "\n" for line in LINES))
    freeze(workdir / EXPANSION, "expansions.doc2q", workdir / MINI / "questions" / "frozen.lock")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["dataset"]["expansions"] = {"doc2q": str(EXPANSION)}
    config["methods"] = METHODS
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = planned_jobs(workdir)
    # the plain and the expanded chunks each embedded once, each BM25 and FAISS index built from its own chunks
    assert jobs["expand_chunks"] == 1 and jobs["embed_corpus"] == 2 and jobs["bm25_index"] == 2, jobs
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def test_the_expanded_indexes_rank_the_plain_chunks_and_find_a_paraphrase(workdir: Path) -> None:
    corpus = workdir / "results" / "mini" / "corpus"
    plain, expanded = (pd.read_parquet(corpus / name / "chunks.parquet") for name in ("sections", "sections~doc2q"))
    assert expanded["chunk_id"].tolist() == plain["chunk_id"].tolist()
    delivery = expanded[expanded["doc_id"] == "delivery"]["text"]
    assert delivery.str.endswith("\n\nWhen will my bike arrive?\nHow long does shipping take?").all()
    assert (expanded[expanded["doc_id"] == "returns-2025"]["text"].to_numpy()
            == plain[plain["doc_id"] == "returns-2025"]["text"].to_numpy()).all()
    runs = workdir / "results" / "mini" / "v1" / "runs"
    bm25, bm25_doc2q = (pd.read_parquet(runs / f"{name}.parquet") for name in ("bm25", "bm25-doc2q"))
    assert set(bm25_doc2q["chunk_id"]) <= set(plain["chunk_id"])
    q3, expanded_q3 = (run[(run["qid"] == "q3") & (run["rank"] == 1)].iloc[0] for run in (bm25, bm25_doc2q))
    assert q3["doc_id"] == expanded_q3["doc_id"] == "delivery"
    assert expanded_q3["score"] > 2 * q3["score"]  # "will", "arrive" are only in the expansion
    dense, dense_doc2q = (pd.read_parquet(runs / f"{name}.parquet") for name in ("dense", "dense-doc2q"))
    top = {name: run[(run["qid"] == "q3") & (run["rank"] == 1)]["doc_id"].item()
           for name, run in (("dense", dense), ("dense-doc2q", dense_doc2q))}
    assert top == {"dense": "returns-2025", "dense-doc2q": "delivery"}  # the paraphrase found through the expansion


def test_an_expansion_naming_an_unknown_document_is_refused_at_start_with_its_line(workdir: Path) -> None:
    bad = workdir / MINI / "expansions.bad.jsonl"
    bad.write_text(json.dumps(LINES[0]) + "\n" + json.dumps({"doc_id": "gone", "questions": ["?"]}) + "\n")
    freeze(bad, "expansions.bad", workdir / MINI / "questions" / "frozen.lock")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["dataset"]["expansions"]["bad"] = str(MINI / "expansions.bad.jsonl")
    config["methods"]["bm25-bad"] = {"type": "bm25", "expansion": "bad"}
    (workdir / "bad.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, "--dry-run", configfile="bad.yaml")
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "expansions.bad.jsonl, line 2: names document 'gone'" in output


def test_an_expansion_edited_after_freezing_is_refused_at_start(workdir: Path) -> None:
    path = workdir / EXPANSION
    original = path.read_text()
    try:
        path.write_text(original.replace("arrive", "come"))
        result = snakemake(workdir, "--dry-run")
        output = result.stdout + result.stderr
        assert result.returncode != 0 and "changed after it was frozen" in output
    finally:
        path.write_text(original)


def test_the_llm_writes_an_expansion_file_to_freeze(server: ChatServer, tmp_path: Path) -> None:
    """`llm.expand` asks for each document's questions (here: two numbered lines naming its title)."""
    server.responder = lambda body: completion("1. What is {0}?\n2. Where is {0} explained?".format(
        body["messages"][-1]["content"].split("Title: ", 1)[1].splitlines()[0]))
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)
    chat = {"backend": "openai", "base_url": server.base_url, "model": "rules", "timeout": 10, "retries": 0,
            "cache": str(tmp_path / "llm-cache")}
    edit_config(workdir, lambda config: config.update(llm={"chat": chat, "expand": {"questions": 2}}))
    result = snakemake(workdir, "--cores", "1", "llm")
    assert result.returncode == 0, result.stderr[-3000:]
    path = workdir / "results" / "mini" / "llm" / "expansions.jsonl"
    questions = load_expansions(path, {json.loads(line)["doc_id"] for line in (workdir / MINI / "corpus.jsonl")
                                       .read_text().splitlines()})
    assert len(questions) == 6 and questions["delivery"] == ["What is Delivery?", "Where is Delivery explained?"]
