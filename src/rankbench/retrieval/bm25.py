"""BM25 retrieval on bm25s's scores: one analyzer for corpus and queries, one-file indexes, top-k search.

Conventions
-----------
* Scores are bm25s's: the "robertson" and "lucene" variants omit the constant factor (k1 + 1) of the
  textbook formula (as Lucene >= 8 does), so they equal rank_bm25's BM25Okapi scores / (k1 + 1);
  rankings are unchanged. A query term repeated n times counts n times (as in bm25s and rank_bm25).
* No match: `search` only returns documents sharing at least one term with the query. Slots it
  cannot fill (no overlap, all-stopword or all-unknown queries, k > number of matches) hold
  position -1 and score 0.0. Callers drop rows with position -1 (and may also drop score <= 0:
  with "robertson"/"atire" a term found in most documents has IDF 0). For "bm25l"/"bm25+" every
  document gets a positive baseline score, which is why no-match is decided by term overlap, not score.
* Order: score descending, then corpus position ascending. Ties are broken the same way at the k-th
  place, so the returned set is deterministic (search is single-threaded; no thread count).
* Backends: "numpy", or "numba" (rankbench.retrieval.bm25_numba: compiled, skips documents that cannot reach
  the top k; identical positions and scores, ~7x faster at 100k passages), or "auto" (the default): numba from
  NUMBA_MIN_PASSAGES passages when it is installed, numpy below, where loading numba's compiled code costs more
  than it saves.
* Only build_index runs bm25s (to compute the scores); loading and searching an index use numpy alone, so a search
  job imports neither bm25s nor numba nor scipy (~0.3 CPU s a job) unless it searches with numba.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from rankbench.corpus.filters import ChunkMasks
from rankbench.errors import InputError
from rankbench.io.files import write_npz
from rankbench.io.progress import Progress, blocks
from rankbench.retrieval.analyzer import Analyzer

VARIANTS: tuple[str, ...] = ("robertson", "lucene", "atire", "bm25l", "bm25+")
BACKENDS: tuple[str, ...] = ("auto", "numpy", "numba")
NUMBA_INSTALLED = importlib.util.find_spec("numba") is not None
DEFAULT_BACKEND = "auto"
# From this many passages "auto" searches with numba. Measured (benchmarks/README.md, "BM25 backend threshold"): a
# fresh process spends ~0.2 CPU s loading numba's cached kernels (a compile, when the cache is empty: 6-17 s), which
# saves ~0.05 ms a query at 10k passages, ~0.25 ms at 50k and ~1.3 ms at 100k: numba pays from ~100k passages for a
# few hundred questions.
NUMBA_MIN_PASSAGES = 100_000
_FORMAT = "rankbench-bm25"
_ANALYZE_BATCH = 10_000  # passages tokenized at once while the index is built
_FORMAT_VERSION = 1


@dataclass(frozen=True)
class BM25Params:
    """BM25 variant (bm25s method name) and its parameters; delta only matters for bm25l / bm25+."""

    variant: str = "lucene"
    k1: float = 1.2
    b: float = 0.75
    delta: float = 0.5

    def __post_init__(self) -> None:
        """Reject unknown variants and out-of-range parameters at construction."""
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown BM25 variant {self.variant!r}; accepted: {', '.join(VARIANTS)}")
        if not self.k1 >= 0:
            raise ValueError(f"k1 must be >= 0, got {self.k1!r}")
        if not 0 <= self.b <= 1:
            raise ValueError(f"b must be in [0, 1], got {self.b!r}")
        if not self.delta >= 0:
            raise ValueError(f"delta must be >= 0, got {self.delta!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (stored in saved indexes)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RM3:
    """RM3 expansion (Lavrenko & Croft; as in Anserini): `fb_terms` terms from the top `fb_docs` passages,
    interpolated with the original query at `original_weight`. Defaults are Anserini's."""

    fb_docs: int = 10
    fb_terms: int = 10
    original_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.fb_docs < 1 or self.fb_terms < 1 or not 0 <= self.original_weight <= 1:
            raise ValueError(f"RM3 needs fb_docs >= 1, fb_terms >= 1 and 0 <= original_weight <= 1, got {self}")


def bm25_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A BM25 method's analyzer, BM25 and RM3 settings with the library's defaults filled in (effective config)."""
    settings = {**index_keys(spec), "backend": spec.get("backend", DEFAULT_BACKEND)}
    if spec.get("prf") is not None:
        settings["prf"] = dataclasses.asdict(RM3(**spec["prf"]))
    return settings


def analyzer_and_params(spec: Mapping[str, Any], language: str) -> tuple[Analyzer, BM25Params]:
    """Analyzer and BM25 parameters from a method's config entry (unset keys take the dataclass defaults)."""
    analyzer_keys = {field.name for field in dataclasses.fields(Analyzer)} - {"language"}
    param_keys = {field.name for field in dataclasses.fields(BM25Params)}
    analyzer = Analyzer(language=language, **{key: spec[key] for key in analyzer_keys if key in spec})
    return analyzer, BM25Params(**{key: spec[key] for key in param_keys if key in spec})


def check_bm25_method(spec: Mapping[str, Any], dataset: Mapping[str, Any], where: str, source: str) -> None:
    """At start (the registry's `check`): a BM25 method's analyzer and parameters can be built for the dataset's
    language (e.g. a stopword list exists for it), and its backend is installed."""
    try:
        analyzer_and_params(spec, dataset["language"])
    except ValueError as error:
        raise InputError(source, where, str(error), "See docs/reference/config.md, `methods`.") from None
    if spec.get("backend") == "numba" and not NUMBA_INSTALLED:
        raise InputError(source, f"{where}.backend", "is numba, which is not installed",
                         "Install the pinned numba (pip install -e .), or set `backend: numpy`.")


def index_keys(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What shapes a method's index (analyzer and BM25 parameters, defaults filled in, sorted): methods that agree
    on it share one index, whatever their query-time settings (rewrite, prf, filters)."""
    analyzer, params = analyzer_and_params(spec, "english")
    keys = {**analyzer.to_dict(), **params.to_dict()}
    del keys["language"]
    return dict(sorted(keys.items()))


@dataclass(frozen=True, eq=False)
class BM25Index:
    """A built or loaded BM25 index: bm25s's term x passage score matrix (CSR), the vocabulary, and the analyzer
    and parameters it was built with. Plain arrays, so that searching it needs neither bm25s nor scipy."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    num_docs: int
    vocab: dict[str, int]
    dtype: str
    nonoccurrence: np.ndarray | None  # bm25l / bm25+: each term's score in a passage without it; else None
    analyzer: Analyzer
    params: BM25Params
    bm25s_version: str  # of the bm25s that computed the scores (kept in saved indexes)

    @property
    def scores(self) -> dict[str, Any]:
        """The score matrix in bm25s's layout (data, indices, indptr, num_docs), as numba kernels take it."""
        return {"data": self.data, "indices": self.indices, "indptr": self.indptr, "num_docs": self.num_docs}


def build_index(texts: Sequence[str], analyzer: Analyzer, params: BM25Params) -> BM25Index:
    """BM25 index of texts (corpus position = index in `texts`), with a sorted, reproducible vocabulary."""
    if len(texts) == 0:
        raise InputError(None, "BM25 index", "has no passage to index (the corpus yields no chunk)",
                         "Give the documents body text (a corpus of headings only yields no chunk).")
    token_ids, offsets, vocab = _corpus_token_ids(texts, analyzer)
    if not vocab:
        raise InputError(None, "BM25 index", f"has nothing to index: all {len(texts)} passages are empty after "
                         f"analysis (no tokens left with {analyzer})",
                         "Give the documents words, or analyze them without stopwords or in their language.")
    import bm25s

    model = bm25s.BM25(k1=params.k1, b=params.b, delta=params.delta, method=params.variant, backend="numpy")
    # bm25s's own index() would want every passage as a list of Python ints at once (~1.4 GB a million passages);
    # its builder reads them once per pass, so each is made from the flat array as it is read.
    model.scores = model.build_index_from_ids(list(vocab.values()), _PassageTokenIds(token_ids, offsets),
                                              show_progress=False)
    scores = model.scores
    return BM25Index(
        data=np.asarray(scores["data"]), indices=np.asarray(scores["indices"]), indptr=np.asarray(scores["indptr"]),
        num_docs=int(scores["num_docs"]), vocab=vocab, dtype=str(model.dtype),
        nonoccurrence=None if model.nonoccurrence_array is None else np.asarray(model.nonoccurrence_array),
        analyzer=analyzer, params=params, bm25s_version=bm25s.__version__,
    )


def _corpus_token_ids(texts: Sequence[str], analyzer: Analyzer) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Every passage's token ids in one flat int32 array, the passages' offsets into it, and the sorted vocabulary
    (token -> id) they refer to. Tokens become ids a few thousand passages at a time, so the corpus is never held as
    Python strings (~2.3 GB a million passages); the ids are renumbered in sorted token order at the end."""
    first_seen: dict[str, int] = {}
    parts: list[np.ndarray] = []
    lengths: list[int] = []
    with Progress(len(texts), f"BM25: analyze {len(texts)} passages", "passages") as progress:
        for part in blocks(len(texts)):
            for start in range(part.start, part.stop, _ANALYZE_BATCH):
                passages = analyzer.tokenize(texts[start:min(start + _ANALYZE_BATCH, part.stop)])
                lengths += map(len, passages)
                parts.append(np.fromiter((first_seen.setdefault(token, len(first_seen))
                                          for token in chain.from_iterable(passages)), dtype=np.int32))
            progress.update(len(part))
    tokens = sorted(first_seen)
    sorted_id = np.empty(len(tokens), dtype=np.int32)
    sorted_id[np.fromiter(map(first_seen.__getitem__, tokens), dtype=np.int64, count=len(tokens))] = np.arange(
        len(tokens), dtype=np.int32)
    token_ids = sorted_id[np.concatenate(parts)] if parts else np.zeros(0, dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    return token_ids, offsets, {token: i for i, token in enumerate(tokens)}


class _PassageTokenIds:
    """The passages' token ids as bm25s's builder reads them (its length, then a list of ints per passage on each
    pass), made on each read from the flat array instead of held."""

    def __init__(self, token_ids: np.ndarray, offsets: np.ndarray) -> None:
        self.token_ids, self.offsets = token_ids, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __iter__(self) -> Iterator[list[int]]:
        for start, stop in zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist()):
            yield self.token_ids[start:stop].tolist()

def save_index(index: BM25Index, path: Path) -> None:
    """Write an index as one .npz (no pickle, fixed timestamps), atomically (io.files)."""
    write_npz(_index_arrays(index), path)


def _index_arrays(index: BM25Index) -> dict[str, np.ndarray]:
    """The arrays that make up a saved index: sparse score matrix, vocabulary, metadata."""
    vocab = sorted(index.vocab, key=index.vocab.__getitem__)
    if [index.vocab[t] for t in vocab] != list(range(len(vocab))):
        raise ValueError("index vocabulary ids are not 0..n-1; save indexes made by build_index")
    meta = {
        "format": _FORMAT,
        "format_version": _FORMAT_VERSION,
        "bm25s_version": index.bm25s_version,
        "num_docs": index.num_docs,
        "dtype": index.dtype,
        "analyzer": index.analyzer.to_dict(),
        "params": index.params.to_dict(),
    }
    arrays = {
        "data": index.data,
        "indices": index.indices,
        "indptr": index.indptr,
        "vocab_json": _json_bytes(vocab),
        "meta_json": _json_bytes(meta),
    }
    if index.nonoccurrence is not None:
        arrays["nonoccurrence"] = index.nonoccurrence
    return arrays


def _json_bytes(value: Any) -> np.ndarray:
    """JSON as a uint8 array, so text travels in .npz without pickle."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _from_json_bytes(array: np.ndarray) -> Any:
    """Inverse of _json_bytes."""
    return json.loads(array.tobytes().decode("utf-8"))


def load_index(path: Path) -> BM25Index:
    """Read an index written by save_index (with the analyzer and parameters it was built with)."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as npz:
        if "meta_json" not in npz.files:
            raise ValueError(f"{path} is not a rankbench BM25 index (no metadata)")
        meta = _from_json_bytes(npz["meta_json"])
        if meta.get("format") != _FORMAT or meta.get("format_version") != _FORMAT_VERSION:
            raise ValueError(
                f"{path}: unsupported index format {meta.get('format')!r} "
                f"version {meta.get('format_version')!r}; rebuild the index"
            )
        vocab = _from_json_bytes(npz["vocab_json"])
        arrays = {name: npz[name] for name in ("data", "indices", "indptr")}
        nonoccurrence = npz["nonoccurrence"] if "nonoccurrence" in npz.files else None
    if len(arrays["indptr"]) != len(vocab) + 1:
        raise ValueError(f"{path}: corrupt index (indptr length does not match the vocabulary)")
    return BM25Index(
        **arrays, num_docs=int(meta["num_docs"]), vocab={token: i for i, token in enumerate(vocab)},
        dtype=meta["dtype"], nonoccurrence=nonoccurrence, analyzer=Analyzer(**meta["analyzer"]),
        params=BM25Params(**meta["params"]), bm25s_version=meta["bm25s_version"],
    )


def search(
    index: BM25Index, analyzer: Analyzer, queries: Sequence[str], k: int, allowed: ChunkMasks | None = None,
    backend: str = "numpy",
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k corpus positions and scores per query ([n_queries, k'], k' = min(k, n_docs)).

    Positions are int64, scores float64. Only documents sharing a term with the query are
    returned; unfilled slots hold position -1 and score 0.0 (see the module docstring).
    Order: score descending, then position ascending (also at the k-th place).
    `allowed` restricts each query to some documents before the top k is taken.
    """
    if analyzer != index.analyzer:
        raise ValueError(f"index was built with {index.analyzer}, not {analyzer}")
    weights = [Counter(tokens) for tokens in analyzer.tokenize(queries)]
    return search_weighted(index, weights, k, allowed, backend)


def search_weighted(
    index: BM25Index, queries: Sequence[Mapping[str, float]], k: int, allowed: ChunkMasks | None = None,
    backend: str = "numpy",
) -> tuple[np.ndarray, np.ndarray]:
    """`search` for queries given as analyzed term -> weight (a term's BM25 contribution is multiplied by it)."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    n_docs = index.num_docs
    width = min(k, n_docs)
    if resolved_backend(backend, n_docs) == "numba":
        return _search_numba(index, queries, width, allowed)
    positions = np.full((len(queries), width), -1, dtype=np.int64)
    scores = np.zeros((len(queries), width), dtype=np.float64)
    vocab = index.vocab
    for row, terms in enumerate(queries):
        known = [(vocab[t], w) for t, w in terms.items() if t in vocab]
        if not known:
            continue
        term_ids = np.array([t for t, _ in known], dtype=np.int64)
        docs, doc_scores = _score_matches(index, term_ids, np.array([w for _, w in known]), n_docs)
        if allowed is not None:
            keep = allowed.masks[allowed.group[row]][docs]
            docs, doc_scores = docs[keep], doc_scores[keep]
        top = _top_k(docs, doc_scores, width)
        positions[row, : len(top)] = docs[top]
        scores[row, : len(top)] = doc_scores[top]
    return positions, scores


def resolved_backend(backend: str, n_docs: int) -> str:
    """The kernel a search with this backend runs over n_docs passages: "auto" is numba from NUMBA_MIN_PASSAGES
    passages (when installed), numpy below."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown BM25 backend {backend!r}; accepted: {', '.join(BACKENDS)}")
    if backend == "auto":
        return "numba" if NUMBA_INSTALLED and n_docs >= NUMBA_MIN_PASSAGES else "numpy"
    return backend


def compile_numba_kernels(index: BM25Index) -> None:
    """Compile (or load from NUMBA_CACHE_DIR) the numba kernels for this index's array types with one search, so
    that the jobs searching it afterwards load them instead of each compiling them."""
    _search_numba(index, [{}], 1, None)


def _search_numba(
    index: BM25Index, queries: Sequence[Mapping[str, float]], width: int, allowed: ChunkMasks | None
) -> tuple[np.ndarray, np.ndarray]:
    """search_weighted on the numba backend: queries flattened to term ids and weights, one compiled call."""
    from rankbench.retrieval import bm25_numba

    vocab = index.vocab
    known = [[(vocab[t], float(w)) for t, w in terms.items() if t in vocab] for terms in queries]
    query_ptr = np.cumsum([0] + [len(terms) for terms in known], dtype=np.int64)
    term_ids = np.array([t for terms in known for t, _ in terms], dtype=np.int64)
    weights = np.array([w for terms in known for _, w in terms], dtype=np.float64)
    baselines = np.zeros(0)
    if index.nonoccurrence is not None:
        nonoccurrence = np.asarray(index.nonoccurrence, dtype=np.float64)
        # The numpy backend's sum, term for term, so the baseline is the same float.
        baselines = np.array([float((nonoccurrence[[t for t, _ in terms]] * [w for _, w in terms]).sum())
                              for terms in known])
    if allowed is None:
        masks, groups = np.zeros((1, 0), dtype=bool), np.zeros(len(known), dtype=np.int64)
    else:
        masks, groups = np.asarray(allowed.masks, dtype=bool), np.asarray(allowed.group, dtype=np.int64)
    return bm25_numba.search_all(index.scores, query_ptr, term_ids, weights, baselines, masks, groups, width)


def _score_matches(
    index: BM25Index, term_ids: np.ndarray, weights: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray]:
    """Documents containing at least one query term, and their weighted BM25 scores (summed in float64)."""
    data, indices, indptr = index.data, index.indices, index.indptr
    spans = [(indptr[t], indptr[t + 1]) for t in term_ids]
    doc_idx = np.concatenate([indices[s:e] for s, e in spans])
    contributions = np.concatenate([np.asarray(data[s:e], dtype=np.float64) * w for (s, e), w in zip(spans, weights)])
    totals: np.ndarray = np.bincount(doc_idx, weights=contributions, minlength=n_docs)
    if index.nonoccurrence is not None:
        # bm25l / bm25+: stored scores are relative to a per-term baseline every document gets.
        totals += float((np.asarray(index.nonoccurrence, dtype=np.float64)[term_ids] * weights).sum())
    matched = np.zeros(n_docs, dtype=bool)
    matched[doc_idx] = True
    docs = np.flatnonzero(matched)
    return docs, totals[docs]


def _top_k(docs: np.ndarray, doc_scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best (score desc, position asc) among docs; ties at the cut included fairly."""
    if len(docs) > k:
        # k-th largest score; partitioning the negated scores stays fast when many scores tie.
        threshold = -np.partition(-doc_scores, k - 1)[k - 1]
        keep = np.flatnonzero(doc_scores >= threshold)
    else:
        keep = np.arange(len(docs))
    order = np.lexsort((docs[keep], -doc_scores[keep]))
    return keep[order[:k]]
