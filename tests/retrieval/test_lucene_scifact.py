"""`type: lucene` against Anserini's published BEIR SciFact figure (`beir-v1.0.0-scifact.flat`, BM25 k1 0.9 b 0.4,
1000 hits: nDCG@10 0.6789, R@100 0.9253, R@1000 0.9767), on the shared copy with its sentence spacing restored.

The method's own path, without Snakemake: the BEIR corpus as the `whole` chunker cuts it (one chunk per abstract,
title then text), indexed once by the jar (~10 s) and searched with the options a `type: lucene` method passes;
scored by pytrec_eval at document grain over the 300 test queries."""

from __future__ import annotations

import pytest
import pytrec_eval
from lucene_helpers import lucene_engine
from workflow_helpers import shared_dataset

from rankbench.corpus.chunking import ChunkerSpec, chunk_corpus, passage_text
from rankbench.io.loaders import load_beir_corpus, load_beir_questions
from rankbench.io.ranked_lists import run_from_topk
from rankbench.retrieval import lucene

pytestmark = pytest.mark.slow
SCIFACT = shared_dataset("scifact")
METHOD = {"type": "lucene", "k1": 0.9, "b": 0.4}
PUBLISHED = {"ndcg_cut_10": 0.6789, "recall_100": 0.9253, "recall_1000": 0.9767}
DEPTH = 1000


@pytest.fixture(scope="module")
def scifact_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """pytrec_eval's qrels and the `type: lucene` run ({qid: {doc_id: score}}) of SciFact's test queries."""
    if SCIFACT is None:
        pytest.skip("BEIR SciFact not found in the shared datasets (../shared/datasets or $RANKBENCH_SHARED_DATASETS)")
    engine = lucene_engine()
    chunks = chunk_corpus(load_beir_corpus(SCIFACT / "corpus.jsonl"), ChunkerSpec("sections", None))
    questions, labels = load_beir_questions(SCIFACT / "queries.jsonl", SCIFACT / "qrels" / "test.tsv")
    analysis = lucene.analyzer(METHOD, "english")
    index = tmp_path_factory.mktemp("scifact-lucene") / "index"
    lucene.build_index(engine, passage_text(chunks), analysis, index, threads=2, heap_mb=2000)  # once
    positions, scores, _ = lucene.search(engine, index, questions["question"].tolist(), lucene.search_options(METHOD),
                                         analysis, DEPTH, threads=2, heap_mb=2000)
    run = run_from_topk(questions["qid"], positions, scores, chunks, DEPTH)
    qrels: dict[str, dict[str, int]] = {}
    for qid, doc_id, grade in labels[["qid", "doc_id", "grade"]].itertuples(index=False):
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    ranked: dict[str, dict[str, float]] = {}
    for qid, doc_id, score in run[["qid", "doc_id", "score"]].itertuples(index=False):
        ranked.setdefault(qid, {})[doc_id] = float(score)
    return qrels, ranked


def test_type_lucene_reproduces_anserinis_published_scifact_figures(scifact_run: tuple[dict, dict]) -> None:
    """Within ±0.001 of each published figure (the hand-run jar gives 0.6785, 0.9253, 0.9767 on this copy)."""
    qrels, ranked = scifact_run
    assert len(qrels) == 300 and all(len(docs) <= DEPTH for docs in ranked.values())
    values = pytrec_eval.RelevanceEvaluator(qrels, set(PUBLISHED)).evaluate(ranked)
    means = {measure: sum(v[measure] for v in values.values()) / len(qrels) for measure in PUBLISHED}
    for measure, published in PUBLISHED.items():
        assert means[measure] == pytest.approx(published, abs=0.001), (measure, means)
