"""Lucene's BM25 through Anserini's jar: the engine checks at start, and on a small fixture the run agrees with
rankbench's own BM25 (`variant: lucene`) and scores exactly as the jar's own TREC file does under trec_eval."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from lucene_helpers import lucene_engine

from rankbench.errors import InputError
from rankbench.io.ranked_lists import run_from_topk
from rankbench.retrieval import lucene
from rankbench.retrieval.analyzer import Analyzer
from rankbench.retrieval.bm25 import BM25Params, build_index, search

# Analyzers that agree token for token: lowercase ASCII words, no stemming, no stopword removal.
PLAIN = lucene.LuceneAnalyzer(language="en", stemmer="none", stopwords=False)
WORDS = [f"w{chr(97 + i)}{chr(97 + j)}" for i in range(8) for j in range(8)]


def _fixture(seed: int = 7) -> tuple[list[str], list[str]]:
    """200 passages of 5-40 Zipf-distributed words, and 30 queries of 2-4 words."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, len(WORDS) + 1)
    weights /= weights.sum()
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(5, 41), p=weights)) for _ in range(200)]
    queries = [" ".join(rng.choice(WORDS, size=rng.integers(2, 5), replace=False)) for _ in range(30)]
    return texts, queries


@pytest.fixture(scope="module")
def engine() -> lucene.Engine:
    return lucene_engine()


@pytest.fixture(scope="module")
def index(engine: lucene.Engine, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lucene") / "index"
    lucene.build_index(engine, _fixture()[0], PLAIN, folder, threads=1, heap_mb=512)
    return folder


def test_lucene_bm25_agrees_with_rankbench_bm25_and_the_jars_own_file(engine: lucene.Engine, index: Path,
                                                                      tmp_path: Path) -> None:
    texts, queries = _fixture()
    chunks = pd.DataFrame({"chunk_id": [f"c{n:03d}" for n in range(len(texts))],
                           "doc_id": [f"d{n:03d}" for n in range(len(texts))]})
    options = lucene.search_options({"k1": 0.9, "b": 0.4})
    positions, scores, loop_s = lucene.search(engine, index, queries, options, PLAIN, 10, threads=1, heap_mb=512)
    ours = build_index(texts, Analyzer(stopwords=False, stemming=False), BM25Params("lucene", k1=0.9, b=0.4))
    own_positions, own_scores = search(ours, Analyzer(stopwords=False, stemming=False), queries, 10, None, "numpy")
    assert loop_s is not None and 0 < loop_s < 60  # the search loop's seconds, from Anserini's log
    overlap = [len(set(a[a >= 0]) & set(b[b >= 0])) / 10 for a, b in zip(positions, own_positions)]
    # Lucene stores a document's length in one byte (SmallFloat): the only difference from exact BM25 here.
    assert np.mean(overlap) >= 0.9
    assert np.allclose(scores[:, 0], own_scores[:, 0], rtol=0.03)
    # The run read back scores exactly as trec_eval scores the jar's own TREC file (ids are positions there).
    run = run_from_topk([str(n) for n in range(len(queries))], positions, scores, chunks, 10)
    qrels = {str(q): {f"c{p:03d}": 1 for p in own_positions[q][:3]} for q in range(len(queries))}
    jar_run = tmp_path / "jar.trec"
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"{n}\t{q}\n" for n, q in enumerate(queries)))
    lucene.run_anserini(engine, "search.SearchCollection",
                        ["-index", str(index), "-topics", str(topics), "-topicReader", "TsvString", "-output",
                         str(jar_run), "-hits", "10", "-threads", "1", *options, *PLAIN.options()], 512)
    theirs: dict[str, dict[str, float]] = {}
    for line in jar_run.read_text().splitlines():
        topic, _, doc, _, score, _ = line.split()
        theirs.setdefault(topic, {})[f"c{int(doc):03d}"] = float(score)
    ours_trec = {qid: dict(zip(group["chunk_id"], group["score"])) for qid, group in run.groupby("qid")}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map"})
    assert evaluator.evaluate(ours_trec) == evaluator.evaluate(theirs)
    assert run.groupby("qid")["rank"].max().max() == 10


# English words whose analysis differs between Lucene's (Porter, possessives) and rankbench's (`\\w+`, Snowball).
ENGLISH = ("the", "of", "and", "generously", "generous", "generalization", "general", "running", "runs", "ran",
           "connection", "connected", "conditional", "conditions", "user's", "users", "e-mail", "emails", "x-ray",
           "rays", "happily", "happiness", "relational", "relations", "fairly", "fairness", "dying", "died")


def test_analyzer_rankbench_gives_lucene_rankbenchs_tokens_so_its_run_is_rankbenchs(
        engine: lucene.Engine, tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    texts = [" ".join(rng.choice(ENGLISH, size=rng.integers(5, 40))) for _ in range(200)]
    queries = [" ".join(rng.choice(ENGLISH, size=rng.integers(2, 5), replace=False)) for _ in range(40)]
    spec = {"analyzer": "rankbench", "k1": 0.9, "b": 0.4}
    keys = lucene.index_keys(spec, "english")
    assert keys != lucene.index_keys({"k1": 0.9, "b": 0.4}, "english")  # the mode is part of the index's identity
    tokens = lucene.analyzer_from_keys(keys)
    lucene.build_index(engine, texts, tokens, tmp_path / "index", threads=1, heap_mb=512)
    positions, _, _ = lucene.search(engine, tmp_path / "index", queries, lucene.search_options(spec), tokens, 10,
                                    threads=1, heap_mb=512)
    analyzer = Analyzer()  # the bm25 type's defaults: Lucene's English stopwords, Snowball English
    ours = build_index(texts, analyzer, BM25Params("lucene", k1=0.9, b=0.4))
    own_positions, _ = search(ours, analyzer, queries, 10, None, "numpy")
    overlap = [len(set(a[a >= 0]) & set(b[b >= 0])) / 10 for a, b in zip(positions, own_positions)]
    # What is left is Lucene's one-byte document length (SmallFloat) and its 4-decimal scores' ties.
    assert np.mean(overlap) >= 0.9
    qrels = {str(q): {str(d): int(rng.integers(1, 3)) for d in rng.choice(200, size=8, replace=False)}
             for q in range(len(queries))}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})

    def ndcg(ranked: np.ndarray) -> float:
        run = {str(q): {str(d): float(10 - r) for r, d in enumerate(row) if d >= 0} for q, row in enumerate(ranked)}
        return float(np.mean([m["ndcg_cut_10"] for m in evaluator.evaluate(run).values()]))

    assert ndcg(positions) == pytest.approx(ndcg(own_positions), abs=0.01)
    assert tokens.texts(["The user's e-mails"]) == ["user s e mail"]


def test_a_key_of_the_other_analyzer_mode_is_one_clear_error(engine: lucene.Engine) -> None:
    dataset = {"language": "english"}
    with pytest.raises(InputError, match=r"methods\.lucene\.stemmer: is a key of `analyzer: lucene`, but this "
                                         r"method's analyzer is rankbench"):
        lucene.check_lucene_method({"analyzer": "rankbench", "stemmer": "porter"}, dataset, "methods.lucene", "c.yaml")
    with pytest.raises(InputError, match=r"methods\.lucene\.fold_accents: is a key of `analyzer: rankbench`"):
        lucene.check_lucene_method({"fold_accents": True}, dataset, "methods.lucene", "c.yaml")
    with pytest.raises(InputError, match=r"methods\.lucene\.analyzer: no stopword list for language 'finnish'"):
        lucene.check_lucene_method({"analyzer": "rankbench"}, {"language": "finnish"}, "methods.lucene", "c.yaml")


def test_rm3_expands_the_query_through_the_jar(engine: lucene.Engine, index: Path) -> None:
    queries = _fixture()[1]
    plain = lucene.search(engine, index, queries, lucene.search_options({}), PLAIN, 10, 1, 512)
    rm3 = lucene.search(engine, index, queries,
                        lucene.search_options({"prf": {"fb_docs": 3, "fb_terms": 5, "original_weight": 0.5}}),
                        PLAIN, 10, 1, 512)
    assert not np.array_equal(plain[0], rm3[0])


def test_the_search_loops_seconds_sum_anserinis_counts_over_its_threads() -> None:
    log = ("... ranker: bm25(k1=0.9,b=0.4), reranker: default: 600 queries processed in 00:00:05 = ~120.00 q/s\n"
           "... ranker: bm25(k1=0.9,b=0.4), reranker: default: 1,000 queries processed in 00:00:10 = ~100.0 q/s\n")
    assert lucene.search_seconds(log) == pytest.approx(15.0)
    assert lucene.search_seconds("no count here") is None


def _java(tmp_path: Path, version: str) -> str:
    """An executable that answers `-version` as a JDK of this version does (on stderr)."""
    script = tmp_path / "java"
    script.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2025-04-15' >&2\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_too_old_java_or_a_missing_jar_is_one_clear_error_naming_the_key(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(lucene.JAR_ENV, raising=False)
    monkeypatch.delenv(lucene.JAVA_ENV, raising=False)
    dataset = {"language": "english"}
    old = _java(tmp_path, "17.0.15")
    with pytest.raises(InputError, match=r"methods\.lucene\.java: .* is Java 17.0.15; Anserini 1.x needs Java 21\+"
                                         r".*rankbench\[lucene\]"):
        lucene.check_lucene_method({"java": old, "jar": "x.jar"}, dataset, "methods.lucene", "c.yaml")
    new = _java(tmp_path / "..", "25.0.2")
    with pytest.raises(InputError, match=r"methods\.lucene\.jar: no Anserini fatjar is configured .*make lucene-jar"):
        lucene.check_lucene_method({"java": new}, dataset, "methods.lucene", "c.yaml")
    with pytest.raises(InputError, match=r"methods\.lucene\.jar: 'missing.jar' is not an existing file"):
        lucene.check_lucene_method({"java": new, "jar": "missing.jar"}, dataset, "methods.lucene", "c.yaml")
    other = tmp_path / "other.jar"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    with pytest.raises(InputError, match=r"is not an Anserini fatjar"):
        lucene.check_lucene_method({"java": new, "jar": str(other)}, dataset, "methods.lucene", "c.yaml")
    with pytest.raises(ValueError, match=r"the dataset's language 'greek' has no Anserini code here; set `language`"):
        lucene.analyzer({}, "greek")


def test_java_versions_parse_old_and_new_schemes() -> None:
    assert lucene.java_major("1.8.0_392") == 8
    assert lucene.java_major("17.0.15") == 17
    assert lucene.java_major("25") == 25


def test_settings_default_to_the_bm25_types_and_options_follow_them() -> None:
    assert lucene.lucene_settings({}) == {"k1": 1.2, "b": 0.75, "analyzer": "lucene", "stemmer": "porter",
                                          "stopwords": True}
    assert lucene.lucene_settings({"analyzer": "rankbench"}) == {"k1": 1.2, "b": 0.75, "analyzer": "rankbench",
                                                                 "stopwords": True, "stemming": True,
                                                                 "fold_accents": False}
    assert lucene.search_options({"k1": 0.9, "prf": {"fb_docs": 5}}) == [
        "-bm25", "-bm25.k1", "0.9", "-bm25.b", "0.75", "-rm3", "-rm3.fbDocs", "5", "-rm3.fbTerms", "10",
        "-rm3.originalQueryWeight", "0.5"]
    assert lucene.analyzer({"stopwords": False}, "french").options() == [
        "-language", "fr", "-stemmer", "porter", "-keepStopwords"]
