"""Unit tests of rankbench.retrieval.bm25: analysis, index build, one-file save/load, search conventions."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import bm25s
import bm25s.stopwords
import numpy as np
import pytest

from rankbench.corpus.filters import ChunkMasks
from rankbench.errors import InputError
from rankbench.retrieval import analyzer as analyzer_module
from rankbench.retrieval import bm25
from rankbench.retrieval.analyzer import LANGUAGES, Analyzer
from rankbench.retrieval.bm25 import (
    RM3,
    VARIANTS,
    BM25Params,
    build_index,
    load_index,
    save_index,
    search,
    search_weighted,
)
from rankbench.retrieval.rm3 import rm3_queries

FRENCH = [
    "Les remboursements des frais médicaux sont versés sous dix jours.",
    "Le délai de préavis pour la résiliation du contrat est de trois mois.",
    "Vous pouvez demander une attestation de salaire au service du personnel.",
    "Les congés payés non pris sont perdus au 31 mai.",
    "Le télétravail est possible deux jours par semaine avec l'accord du manager.",
    "La mutuelle prend en charge les lunettes une fois tous les deux ans.",
]
ENGLISH = [
    "The cat sat on the mat.",
    "Dogs and cats are common pets in the city.",
    "Refunds are processed within ten working days.",
    "The notice period for cancelling the contract is three months.",
    "A dog chased the cat across the garden.",
    "Travel expenses are refunded after manager approval.",
]
FR = Analyzer(language="french")
EN = Analyzer(language="english")


def _positions(index, analyzer, query, k=10):
    """Matched corpus positions of one query, in rank order (padding dropped)."""
    positions, _ = search(index, analyzer, [query], k)
    return [int(p) for p in positions[0] if p >= 0]


def test_french_stemming_matches_inflections():
    index = build_index(FRENCH, FR, BM25Params())
    assert _positions(index, FR, "rembourser")[0] == 0  # "remboursements" in the document
    assert _positions(index, FR, "résilier")[0] == 1  # "résiliation"
    no_stem = Analyzer(language="french", stemming=False)
    assert _positions(build_index(FRENCH, no_stem, BM25Params()), no_stem, "rembourser") == []


def test_english_stemming_and_lowercase():
    index = build_index(ENGLISH, EN, BM25Params())
    assert set(_positions(index, EN, "REFUND")) == {2, 5}  # "Refunds", "refunded"
    assert set(_positions(index, EN, "cat")) == {0, 1, 4}  # "cat", "cats"


def test_stopwords_removed():
    assert FR.tokenize(["Le préavis de la demande"]) == [["préav", "demand"]]
    assert EN.tokenize(["The cat is on the mat"]) == [["cat", "mat"]]
    keep = Analyzer(language="english", stopwords=False, stemming=False)
    assert keep.tokenize(["The cat is on the mat"]) == [["the", "cat", "is", "on", "the", "mat"]]


def test_fold_accents_matches_unaccented_queries():
    for stemming in (False, True):
        plain = Analyzer(language="french", stemming=stemming)
        folded = Analyzer(language="french", stemming=stemming, fold_accents=True)
        assert _positions(build_index(FRENCH, folded, BM25Params()), folded, "preavis")[0] == 1
        assert _positions(build_index(FRENCH, plain, BM25Params()), plain, "preavis") == []
    no_stem = Analyzer(language="french", stemming=False, fold_accents=True)
    assert _positions(build_index(FRENCH, no_stem, BM25Params()), no_stem, "delai")[0] == 1  # "délai"
    assert no_stem.tokenize(["Cœur ÉTÉ"]) == [["coeur"]]  # "été" is a stopword once folded too


def test_all_stopword_unknown_and_empty_queries_return_no_match_rows():
    index = build_index(FRENCH, FR, BM25Params())
    positions, scores = search(index, FR, ["le la les de", "xyzzy", "", "rembourser"], k=3)
    assert positions.shape == scores.shape == (4, 3)
    assert (positions[:3] == -1).all() and (scores[:3] == 0).all()
    assert positions[3, 0] == 0 and scores[3, 0] > 0 and (positions[3, 1:] == -1).all()


def test_k_larger_than_corpus_pads_with_no_match():
    index = build_index(ENGLISH, EN, BM25Params())
    positions, scores = search(index, EN, ["cat", "refund cat dog"], k=100)
    assert positions.shape == (2, len(ENGLISH))
    assert positions.dtype == np.int64 and scores.dtype == np.float64
    assert set(positions[0]) == {0, 1, 4, -1}
    assert sorted(p for p in positions[1] if p >= 0) == [0, 1, 2, 4, 5]
    matched = positions >= 0
    assert (scores[matched] > 0).all() and (scores[~matched] == 0).all()
    assert all((np.diff(row[row > 0]) <= 0).all() for row in scores)  # score descending


def test_ties_ordered_by_position_and_cut_deterministically():
    texts = ["alpha beta", "gamma", "alpha beta", "alpha beta", "delta"]
    analyzer = Analyzer(stopwords=False, stemming=False)
    index = build_index(texts, analyzer, BM25Params())
    positions, scores = search(index, analyzer, ["alpha"], k=2)
    assert positions.tolist() == [[0, 2]] and scores[0, 0] == scores[0, 1]


def test_save_load_round_trip_is_identical(tmp_path: Path):
    queries = ["rembourser frais", "délai préavis résiliation", "le", "congés payés mai", "lunettes"]
    for variant in VARIANTS:
        params = BM25Params(variant=variant, k1=1.5, b=0.6)
        index = build_index(FRENCH, FR, params)
        path = tmp_path / f"{variant}.npz"
        save_index(index, path)
        loaded = load_index(path)
        assert (loaded.analyzer, loaded.params) == (FR, params)
        before, after = search(index, FR, queries, 4), search(loaded, loaded.analyzer, queries, 4)
        np.testing.assert_array_equal(before[0], after[0])
        np.testing.assert_array_equal(before[1], after[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{v}.npz" for v in VARIANTS)


def test_save_is_byte_reproducible_and_pickle_free(tmp_path: Path):
    params = BM25Params()
    save_index(build_index(ENGLISH, EN, params), tmp_path / "a.npz")
    save_index(build_index(ENGLISH, EN, params), tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz", allow_pickle=False) as npz:
        assert all(npz[name].dtype != object for name in npz.files)


def test_searching_a_saved_index_imports_neither_bm25s_nor_numba_nor_scipy(tmp_path: Path):
    """A retrieval job (a fresh process) loads an index and searches it, with and without RM3, on the numpy backend
    without importing bm25s, numba or scipy (~0.3 CPU s a job): only building an index needs bm25s."""
    index = build_index(ENGLISH, EN, BM25Params(variant="bm25l"))
    save_index(index, tmp_path / "i.npz")
    job = ("import sys\n"
           "from rankbench.retrieval.bm25 import RM3, load_index, search, search_weighted\n"
           "from rankbench.retrieval.rm3 import rm3_queries\n"
           f"index = load_index({str(tmp_path / 'i.npz')!r})\n"
           "positions, _ = search(index, index.analyzer, ['cat dogs'], 3, backend='numpy')\n"
           f"expanded = rm3_queries(index, index.analyzer, ['refunds'], {ENGLISH!r}, RM3(fb_docs=2))\n"
           "expanded_positions, _ = search_weighted(index, expanded, 3, backend='numpy')\n"
           "print(positions.tolist(), expanded_positions.tolist(),"
           " sorted(m for m in ('bm25s', 'numba', 'scipy') if m in sys.modules))\n")
    found = subprocess.run([sys.executable, "-c", job], capture_output=True, text=True, check=True).stdout
    expanded = search_weighted(index, rm3_queries(index, EN, ["refunds"], ENGLISH, RM3(fb_docs=2)), 3)[0]
    assert found == f"{search(index, EN, ['cat dogs'], 3)[0].tolist()} {expanded.tolist()} []\n"


def test_stopwords_are_bm25s_lists_read_without_its_package_init(monkeypatch):
    """The lists are read from bm25s's stopwords.py by file (its package __init__ imports numba and scipy), and are
    exactly bm25s.stopwords' for every language; without that file, bm25s.stopwords itself is used."""
    assert analyzer_module._bm25s_stopwords() is not bm25s.stopwords  # loaded by file, not through the package
    for language, name in analyzer_module._STOPWORDS.items():
        assert set(getattr(analyzer_module._bm25s_stopwords(), name)) == set(getattr(bm25s.stopwords, name)), language
        assert Analyzer(language=language, stemming=False).tokenize([" ".join(getattr(bm25s.stopwords, name))]) \
            == [[]], language
    analyzer_module._bm25s_stopwords.cache_clear()
    monkeypatch.setattr(analyzer_module.importlib.util, "find_spec", lambda name: None)
    assert analyzer_module._bm25s_stopwords() is bm25s.stopwords
    monkeypatch.undo()
    analyzer_module._bm25s_stopwords.cache_clear()


def test_variants_and_parameters_change_scores():
    query = ["cat dog refunds"]
    results = {v: search(build_index(ENGLISH, EN, BM25Params(variant=v)), EN, query, 6)[1] for v in VARIANTS}
    for i, a in enumerate(VARIANTS):
        for b in VARIANTS[i + 1 :]:
            assert not np.allclose(results[a], results[b]), (a, b)
    low_b = search(build_index(ENGLISH, EN, BM25Params(b=0.0)), EN, query, 6)[1]
    assert not np.allclose(low_b, results["lucene"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_scores_agree_with_bm25s_full_scoring(variant: str):
    params = BM25Params(variant=variant)
    positions, scores = search(build_index(ENGLISH, EN, params), EN, ["cat dogs travel"], 6)
    model = bm25s.BM25(k1=params.k1, b=params.b, delta=params.delta, method=variant, backend="numpy")
    model.index(EN.tokenize(ENGLISH), show_progress=False)  # bm25s's own index and scorer, every document
    full = model.get_scores(EN.tokenize(["cat dogs travel"])[0])
    matched = positions[0] >= 0
    np.testing.assert_allclose(scores[0][matched], full[positions[0][matched]], rtol=1e-6)


def test_robertson_scores_match_hand_computation():
    texts = ["apple banana apple", "banana cherry", "cherry cherry date fig", "fig grape", "kiwi lemon mango"]
    analyzer = Analyzer(stopwords=False, stemming=False)
    k1, b = 1.2, 0.75
    index = build_index(texts, analyzer, BM25Params(variant="robertson", k1=k1, b=b))
    docs = [t.split() for t in texts]
    n_docs, avgdl = len(docs), sum(len(d) for d in docs) / len(docs)

    def expected(query: str, doc: list[str]) -> float:
        """Robertson BM25: IDF ln((N - df + .5)/(df + .5)) floored at 0; TF part without (k1 + 1)."""
        tf, total = Counter(doc), 0.0
        for term in query.split():
            df = sum(term in d for d in docs)
            idf = max(0.0, math.log((n_docs - df + 0.5) / (df + 0.5)))
            norm = k1 * (1 - b + b * len(doc) / avgdl)
            total += idf * tf[term] / (tf[term] + norm)
        return total

    for query in ["apple cherry", "cherry fig date", "banana"]:
        positions, scores = search(index, analyzer, [query], 5)
        checked = 0
        for pos, score in zip(positions[0], scores[0]):
            if pos >= 0:
                assert score == pytest.approx(expected(query, docs[pos]), abs=1e-5)
                checked += 1
        assert checked >= 1
    assert expected("apple cherry", docs[2]) == pytest.approx(search(index, analyzer, ["cherry"], 1)[1][0, 0], abs=1e-5)


def test_errors_name_the_bad_value_and_the_accepted_ones():
    # Bad data, not a bug: InputError, which a job reports as one line instead of a traceback.
    with pytest.raises(InputError, match="no passage to index"):
        build_index([], EN, BM25Params())
    with pytest.raises(InputError, match="empty after analysis"):
        build_index(["the a of", ""], EN, BM25Params())
    with pytest.raises(ValueError, match=r"'okapi'.*robertson, lucene, atire, bm25l, bm25\+"):
        BM25Params(variant="okapi")
    with pytest.raises(ValueError, match=r"'klingon'.*english.*french"):
        Analyzer(language="klingon")
    with pytest.raises(ValueError, match="no stopword list for language 'porter'"):
        Analyzer(language="porter")
    assert "porter" in LANGUAGES and Analyzer(language="porter", stopwords=False).tokenize(["running"]) == [["run"]]
    index = build_index(ENGLISH, EN, BM25Params())
    with pytest.raises(ValueError, match="k must be >= 1"):
        search(index, EN, ["cat"], 0)
    with pytest.raises(ValueError, match="index was built with"):
        search(index, FR, ["cat"], 3)
    with pytest.raises(TypeError):
        EN.tokenize("a single string")


def test_load_rejects_foreign_npz(tmp_path: Path):
    np.savez(tmp_path / "other.npz", x=np.arange(3))
    with pytest.raises(ValueError, match="not a rankbench BM25 index"):
        load_index(tmp_path / "other.npz")


numba_installed = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                     reason="numba is not installed (pinned in pyproject.toml: pip install -e .)")


def _tied_corpus(seed: int) -> tuple[list[str], list[str]]:
    """500 short passages over 60 Zipf-drawn words (many equal scores; common and rare terms, so the numba
    kernel's both paths run) and 200 queries, plus unknown and empty ones."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(60)]
    p = 1 / np.arange(1, 61)
    passages = [" ".join(rng.choice(words, size=rng.integers(1, 8), p=p / p.sum())) for _ in range(500)]
    queries = [" ".join(rng.choice(words, size=rng.integers(1, 5))) for _ in range(200)]
    return passages, queries + ["unknownword", ""]


@numba_installed
@pytest.mark.parametrize("variant", VARIANTS)
def test_numba_backend_equals_numpy(variant):
    """Top 100 and scores identical to the numpy backend, bit for bit, ties included; with and without masks."""
    passages, queries = _tied_corpus(7)
    analyzer = Analyzer(stopwords=False, stemming=False)
    index = build_index(passages, analyzer, BM25Params(variant=variant))
    expected = search(index, analyzer, queries, 100)
    got = search(index, analyzer, queries, 100, backend="numba")
    assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1])
    tied = (expected[1][:, 1:] == expected[1][:, :-1]) & (expected[0][:, 1:] >= 0)
    assert tied.sum() > 1000  # equal scores side by side: the order among them is tested too
    postings = np.diff(index.indptr)
    sums = [sum(postings[index.vocab[t]] for t in q.split() if t in index.vocab) for q in queries]
    assert min(n for n in sums if n) * 8 <= len(passages) < max(sums) * 8  # queries with few postings and many
    rng = np.random.default_rng(1)
    allowed = ChunkMasks(group=rng.integers(0, 3, size=len(queries)), masks=rng.random((3, len(passages))) < 0.5)
    for k in (1, 7, 1000):
        expected = search(index, analyzer, queries, k, allowed)
        got = search(index, analyzer, queries, k, allowed, backend="numba")
        assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1])
    weighted = [{"w1": 0.7, "w2": 0.15, "w29": 0.15}, {"w3": 2.0}, {"nothing": 1.0}, {}]
    expected, got = search_weighted(index, weighted, 50), search_weighted(index, weighted, 50, backend="numba")
    assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1])


@numba_installed
@pytest.mark.parametrize("variant", VARIANTS)
def test_numba_pruning_keeps_every_result(variant):
    """The numba backend skips documents that cannot reach the top k (MaxScore, a floor from the strongest terms,
    the exhaustive sum for common terms): on a Zipf corpus with rare and ubiquitous words, and a word in every
    passage (IDF 0 under robertson: every match scores 0), it still returns the numpy backend's lists bit for bit."""
    rng = np.random.default_rng(3)
    words = np.array([f"w{i}" for i in range(400)])
    p = 1 / np.arange(1, 401) ** 1.1
    passages = [" ".join(["everywhere", *rng.choice(words, size=rng.integers(5, 30), p=p / p.sum())])
                for _ in range(4000)]
    queries = [" ".join(rng.choice(words, size=rng.integers(1, 6), p=p / p.sum())) for _ in range(300)]
    queries += [" ".join(rng.choice(words[200:], size=2)) + " w0 w1" for _ in range(50)]
    queries += ["everywhere", "everywhere w0", "everywhere w399"]
    analyzer = Analyzer(stopwords=False, stemming=False)
    index = build_index(passages, analyzer, BM25Params(variant=variant))
    for k in (1, 10, 100):
        expected = search(index, analyzer, queries, k)
        got = search(index, analyzer, queries, k, backend="numba")
        assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1])
        assert (expected[0][:, -1] >= 0).mean() > 0.9  # full lists: the cut at the k-th place is exercised
    if variant == "robertson":
        assert np.all(search(index, analyzer, ["everywhere"], 5)[1] == 0.0)  # the IDF-0 case is really there


@numba_installed
@pytest.mark.parametrize("seed", range(5))
def test_numba_equals_numpy_on_random_zipf_corpora(seed):
    """Property: on random Zipf corpora (odd sizes, a word in every passage for IDF-0 terms, every variant), weighted
    queries with and without masks get the numpy backend's lists bit for bit at k 1, 10 and 100, whichever of the
    floor, MaxScore or the exhaustive sum handles them."""
    rng = np.random.default_rng(100 + seed)
    n_words, n_passages = int(rng.integers(40, 400)), int(rng.integers(600, 2500)) | 1
    words = np.array([f"w{i}" for i in range(n_words)])
    p = 1 / np.arange(1, n_words + 1) ** rng.uniform(0.8, 1.4)
    passages = [" ".join(["everywhere", *rng.choice(words, size=rng.integers(1, 40), p=p / p.sum())])
                for _ in range(n_passages)]
    analyzer = Analyzer(stopwords=False, stemming=False)
    index = build_index(passages, analyzer, BM25Params(variant=VARIANTS[seed % len(VARIANTS)]))
    queries = [{str(w): float(rng.choice([1.0, 2.0, 0.5, rng.uniform(0.01, 3.0)]))
                for w in rng.choice(words, size=rng.integers(1, 7), p=p / p.sum())} for _ in range(150)]
    queries += [{"everywhere": 1.0}, {"everywhere": 1.0, str(words[-1]): 1.0}, {str(words[0]): 1.0, "unknown": 1.0}]
    allowed = ChunkMasks(group=rng.integers(0, 2, size=len(queries)), masks=rng.random((2, n_passages)) < 0.7)
    for k in (1, 10, 100):
        for masks in (None, allowed):
            expected = search_weighted(index, queries, k, masks)
            got = search_weighted(index, queries, k, masks, backend="numba")
            assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1])
    assert (expected[0][:, -1] >= 0).mean() > 0.5  # mostly full lists: the cut at the k-th place is exercised


@numba_installed
@pytest.mark.parametrize("variant", VARIANTS)
def test_numba_leaves_terms_that_add_nothing_out_and_fills_with_their_first_matches(variant):
    """Terms whose every posting is 0 (robertson's IDF 0: in over half the passages) are left out of the numba
    search and fill the list in position order only when fewer than k passages score above 0: lists equal numpy's
    bit for bit whether those terms come first or last in the query, with rare terms of fewer matches than k, weights
    of 0, a negative weight (which keeps them in), masks, and k beyond the matches."""
    rng = np.random.default_rng(11)
    passages = []
    for _ in range(3001):
        common = [w for w, share in (("often", 0.8), ("mostly", 0.6), ("halfway", 0.55)) if rng.random() < share]
        rare = [f"r{j}" for j in rng.choice(40, size=rng.integers(0, 3))] if rng.random() < 0.05 else []
        passages.append(" ".join(["everywhere", *common, *rare, *rng.choice([f"w{j}" for j in range(300)], size=6)]))
    analyzer = Analyzer(stopwords=False, stemming=False)
    index = build_index(passages, analyzer, BM25Params(variant=variant))
    queries = [{"everywhere": 1.0}, {"often": 1.0, "mostly": 2.0}, {"often": 1.0, "r3": 1.0},
               {"r3": 1.0, "often": 1.0}, {"r3": 1.0, "r7": 0.5, "everywhere": 1.0, "mostly": 1.0},
               {"w5": 1.0, "everywhere": 1.0}, {"r3": 0.0, "often": 1.0}, {"r3": 1.0, "w9": -0.5, "often": 1.0},
               {"halfway": 1.0, "r12": 1.0, "nothing": 1.0}]
    vocabulary = ["everywhere", "often", "mostly", "halfway", *(f"r{j}" for j in range(40)), "w1", "w2"]
    queries += [{str(w): float(rng.choice([1.0, 2.0, 0.3])) for w in rng.choice(vocabulary, size=rng.integers(1, 5))}
                for _ in range(120)]
    allowed = ChunkMasks(group=rng.integers(0, 2, size=len(queries)), masks=rng.random((2, len(passages))) < 0.6)
    for k in (1, 10, 100, 5000):
        for masks in (None, allowed):
            expected = search_weighted(index, queries, k, masks)
            got = search_weighted(index, queries, k, masks, backend="numba")
            assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1])
    if variant == "robertson":  # the case is there: "often" matches 80% of passages, all at score 0, r3 few
        positions, scores = search_weighted(index, [{"often": 1.0, "r3": 1.0}], 100)
        assert 0 < (scores[0] > 0).sum() < 100 and (scores[0] == 0).sum() > 0 and positions[0, -1] >= 0


def test_unknown_backend_is_refused():
    index = build_index(ENGLISH, EN, BM25Params())
    with pytest.raises(ValueError, match="unknown BM25 backend 'jax'; accepted: auto, numpy, numba"):
        search(index, EN, ["cat"], 5, backend="jax")


def test_auto_backend_picks_numpy_below_the_threshold_and_numba_from_it(monkeypatch):
    """auto: numpy below NUMBA_MIN_PASSAGES passages, numba from there when installed (numpy without numba), and the
    same runs either way."""
    assert bm25.DEFAULT_BACKEND == "auto"
    assert bm25.resolved_backend("auto", bm25.NUMBA_MIN_PASSAGES - 1) == "numpy"
    assert bm25.resolved_backend("auto", bm25.NUMBA_MIN_PASSAGES) == ("numba" if bm25.NUMBA_INSTALLED else "numpy")
    assert bm25.resolved_backend("numba", 10) == "numba" and bm25.resolved_backend("numpy", 10**9) == "numpy"
    monkeypatch.setattr(bm25, "NUMBA_INSTALLED", False)
    assert bm25.resolved_backend("auto", 10**9) == "numpy"
    monkeypatch.undo()
    passages, queries = _tied_corpus(3)
    analyzer = Analyzer(stopwords=False, stemming=False)
    index = build_index(passages, analyzer, BM25Params())
    expected = search(index, analyzer, queries, 20, backend="numpy")
    if bm25.NUMBA_INSTALLED:  # the threshold lowered under the corpus: auto searches with numba, same results
        monkeypatch.setattr(bm25, "NUMBA_MIN_PASSAGES", 1)
        calls = []
        monkeypatch.setattr(bm25, "_search_numba", lambda *args: calls.append(1) or search_numba(*args))
        got = search(index, analyzer, queries, 20, backend="auto")
        assert calls == [1]
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


search_numba = bm25._search_numba


@numba_installed
@pytest.mark.slow
def test_numba_kernels_compile_once_into_the_cache_dir(tmp_path):
    """A second process loads the compiled kernels from NUMBA_CACHE_DIR instead of compiling them again."""
    script = ("from rankbench.retrieval.analyzer import Analyzer\n"
              "from rankbench.retrieval.bm25 import BM25Params, build_index, search\n"
              "from rankbench.retrieval import bm25_numba\n"
              "index = build_index(['a b', 'b c'], Analyzer(stopwords=False), BM25Params())\n"
              "search(index, Analyzer(stopwords=False), ['b'], 2, backend='numba')\n"
              "print(sum(bm25_numba._search_all.stats.cache_hits.values()),"
              " sum(bm25_numba._search_all.stats.cache_misses.values()))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
            for _ in range(2)]
    assert runs[0].stdout.split() == ["0", "1"]  # compiled, and written to the cache
    assert runs[1].stdout.split() == ["1", "0"]  # loaded from it
    assert list((tmp_path / "numba").rglob("bm25_numba._search_all-*.nbc"))


@numba_installed
@pytest.mark.slow
def test_index_job_compiles_the_kernels_its_search_jobs_load(tmp_path):
    """compile_numba_kernels on the saved index (what the bm25_index job runs) fills NUMBA_CACHE_DIR with the very
    specialization a later search of the loaded index uses: that search compiles nothing."""
    build = ("from rankbench.retrieval.analyzer import Analyzer\n"
             "from rankbench.retrieval.bm25 import BM25Params, build_index, compile_numba_kernels, "
             "load_index, save_index\n"
             "analyzer, params = Analyzer(stopwords=False), BM25Params()\n"
             "index = build_index(['a b', 'b c'], analyzer, params)\n"
             f"save_index(index, {str(tmp_path / 'i.npz')!r})\n"
             f"compile_numba_kernels(load_index({str(tmp_path / 'i.npz')!r}))\n")
    search_job = ("from rankbench.retrieval.bm25 import load_index, search_weighted\n"
                  "from rankbench.retrieval import bm25_numba\n"
                  f"index = load_index({str(tmp_path / 'i.npz')!r})\n"
                  "search_weighted(index, [{'b': 1.0}, {'c': 0.5}], 2, backend='numba')\n"
                  "print(sum(bm25_numba._search_all.stats.cache_hits.values()),"
                  " sum(bm25_numba._search_all.stats.cache_misses.values()))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    subprocess.run([sys.executable, "-c", build], env=env, check=True)
    searched = subprocess.run([sys.executable, "-c", search_job], env=env, capture_output=True, text=True, check=True)
    assert searched.stdout.split() == ["1", "0"]  # loaded from the cache, not compiled
