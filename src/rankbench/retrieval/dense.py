"""Dense retrieval with FAISS inner product over normalized vectors (= cosine): exact (flat) or approximate
(HNSW, IVF), optionally restricted to allowed chunks, and the recall an approximate index costs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rankbench.corpus.filters import ChunkMasks
from rankbench.io.files import write_atomically, write_parquet, write_text

if TYPE_CHECKING:
    import faiss

INDEX_KINDS = ("flat", "hnsw", "ivf")
IVF_SEED = 1234


@dataclass(frozen=True)
class IndexSpec:
    """A FAISS index: `flat` (exact), `hnsw` (M, ef_construction; ef_search at query time) or `ivf` (nlist; nprobe
    at query time). Defaults follow FAISS's usual ones."""

    kind: str = "flat"
    M: int = 32
    ef_construction: int = 40
    ef_search: int = 64
    nlist: int = 100
    nprobe: int = 8

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise ValueError(f"unknown FAISS index kind {self.kind!r}; use one of {', '.join(INDEX_KINDS)}")

    @classmethod
    def from_config(cls, spec: Mapping[str, Any] | None) -> IndexSpec:
        """The spec of a method's `index` block (absent: exact)."""
        known = {field.name for field in fields(cls)}
        return cls(**{key: value for key, value in (spec or {}).items() if key in known})

    @property
    def name(self) -> str:
        """File stem of the built index: build parameters only, so methods differing in ef_search/nprobe share it."""
        if self.kind == "hnsw":
            return f"hnsw-M{self.M}-efc{self.ef_construction}"
        if self.kind == "ivf":
            return f"ivf-nlist{self.nlist}"
        return "flat"

    @property
    def build_params(self) -> dict[str, Any]:
        """What building needs (plain values, for a rule's params)."""
        return {key: value for key, value in asdict(self).items() if key in BUILD_KEYS[self.kind]}

    @property
    def settings(self) -> dict[str, Any]:
        """What this kind of index reads, building and searching (a flat index: its kind alone), sorted."""
        keep = BUILD_KEYS[self.kind] + SEARCH_KEYS[self.kind]
        return dict(sorted((key, value) for key, value in asdict(self).items() if key in keep))


# The parameters each kind of index reads when it is built, and when it is searched.
BUILD_KEYS = {"flat": ("kind",), "hnsw": ("kind", "M", "ef_construction"), "ivf": ("kind", "nlist")}
SEARCH_KEYS: dict[str, tuple[str, ...]] = {"flat": (), "hnsw": ("ef_search",), "ivf": ("nprobe",)}


def dense_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A dense method's FAISS index settings with the library's defaults filled in, only those its kind reads
    (effective config: a flat index shows no HNSW or IVF parameter)."""
    return {"index": IndexSpec.from_config(spec.get("index")).settings}


def build_index(vectors: np.ndarray, spec: IndexSpec = IndexSpec()) -> faiss.Index:
    """An inner-product index; built single-threaded with a fixed IVF seed, so the same vectors give the same index."""
    import faiss  # here, not at the top: the workflow imports this module (IndexSpec) when it parses

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    dim = vectors.shape[1]
    index: faiss.Index
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # HNSW insertion and k-means are order-dependent when multi-threaded
    try:
        if spec.kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, spec.M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = spec.ef_construction
        elif spec.kind == "ivf":
            nlist = max(1, min(spec.nlist, len(vectors)))
            index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.cp.seed = IVF_SEED
            index.cp.min_points_per_centroid = 1  # small corpora: no warning spam, same clustering
            index.train(vectors)
        else:
            index = faiss.IndexFlatIP(dim)
        index.add(vectors)
    finally:
        faiss.omp_set_num_threads(threads)
    return index


def save_index(index: faiss.Index, path: Path) -> None:
    """Write a FAISS index atomically, so a killed job leaves no half-written index."""
    import faiss

    write_atomically(path, lambda tmp: faiss.write_index(index, str(tmp)))


def load_index(path: Path) -> faiss.Index:
    """Read a FAISS index written by save_index."""
    import faiss

    return faiss.read_index(str(path))


def _search_params(index: faiss.Index, spec: IndexSpec, k: int, selector: Any = None) -> Any:
    """Query-time parameters for the index type, with an optional ID selector. HNSW explores
    max(ef_search, k) candidates (as hnswlib does): FAISS would otherwise return fewer than k results."""
    import faiss

    if isinstance(index, faiss.IndexHNSW):
        params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # absent from faiss's stubs only
        params.efSearch = max(spec.ef_search, k)
    elif isinstance(index, faiss.IndexIVF):
        params = faiss.SearchParametersIVF()
        params.nprobe = spec.nprobe
    else:
        params = faiss.SearchParameters()
    if selector is not None:
        params.sel = selector
    return params


def search(index: faiss.Index, queries: np.ndarray, k: int, spec: IndexSpec = IndexSpec(),
           allowed: ChunkMasks | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k positions and scores per query; -1 where fewer than k vectors qualify.

    `allowed` restricts each query to some vectors before ranking (a FAISS ID selector, not a post-filter), so the
    list still reaches k whenever k vectors pass. Queries sharing a mask are searched together.
    """
    import faiss

    k = min(k, index.ntotal)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # one thread: the same results on every run
    try:
        if allowed is None:
            scores, positions = index.search(queries, k, params=_search_params(index, spec, k))
            return positions, scores
        positions = np.full((len(queries), k), -1, dtype=np.int64)
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        for g, mask in enumerate(allowed.masks):
            rows = allowed.rows(g)
            if len(rows) and mask.any():
                selector = faiss.IDSelectorBatch(np.flatnonzero(mask).astype(np.int64))
                s, p = index.search(queries[rows], k, params=_search_params(index, spec, k, selector))
                positions[rows], scores[rows] = p, s
        return positions, scores
    finally:
        faiss.omp_set_num_threads(threads)


def recall_against_exact(approximate: np.ndarray, exact: np.ndarray, ks: Sequence[int]) -> pd.DataFrame:
    """Per k: mean/min over queries of |approximate top k ∩ exact top k| / |exact top k| (what the index loses)."""
    rows = []
    for k in sorted(set(ks)):
        values = []
        for approx_row, exact_row in zip(approximate[:, :k], exact[:, :k]):
            truth = set(exact_row[exact_row >= 0].tolist())
            if truth:
                values.append(len(truth & set(approx_row.tolist())) / len(truth))
        values_array = np.asarray(values, dtype=np.float64)
        rows.append({"k": k, "recall_mean": float(values_array.mean()) if len(values) else float("nan"),
                     "recall_min": float(values_array.min()) if len(values) else float("nan"),
                     "n_queries": len(values)})
    return pd.DataFrame(rows, columns=["k", "recall_mean", "recall_min", "n_queries"])



def write_recall(recall: pd.DataFrame, title: str, note: str, table: str | Path, page: str | Path) -> None:
    """An approximate index's recall against exact search, as Parquet and as a Markdown page (a title, a note on the
    search parameters, one row per k)."""
    lines = [f"# {title}", "", note, "", "| k | recall (mean) | recall (min) | queries |", "|---:|---:|---:|---:|"]
    lines += [f"| {row.k} | {row.recall_mean:.4f} | {row.recall_min:.4f} | {row.n_queries} |"
              for row in recall.itertuples()]
    write_parquet(recall, table)
    write_text("\n".join(lines) + "\n", page)
