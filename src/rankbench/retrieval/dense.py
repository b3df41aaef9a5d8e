"""Dense retrieval with FAISS inner product over normalized vectors (= cosine): exact (flat) or approximate
(HNSW, IVF), optionally restricted to allowed chunks, and the recall an approximate index costs. An index may also
shrink the vectors it holds, all from the same float embeddings: truncated to fewer dimensions (Matryoshka models)
and quantized to int8, binary (optionally centered) or product codes, optionally re-scored in float."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rankbench.corpus.filters import ChunkMasks
from rankbench.errors import InputError
from rankbench.io.files import write_atomically, write_parquet, write_text
from rankbench.retrieval.registry import method_defaults, method_type

if TYPE_CHECKING:
    import faiss

INDEX_KINDS = ("flat", "hnsw", "ivf")
QUANTIZATIONS = ("int8", "binary", "binary-centered", "pq")
# Sign bits: of the vectors as they are, or of the vectors minus the corpus mean (stored with the index, subtracted
# from the queries too). An anisotropic encoder (e5's vectors share a large common component) gives nearly the same
# sign on most dimensions for every chunk, so plain sign bits barely tell chunks apart; centered ones do.
BINARY_QUANTIZATIONS = ("binary", "binary-centered")
IVF_SEED = 1234


@dataclass(frozen=True)
class IndexSpec:
    """A FAISS index: `flat` (exact), `hnsw` (M, ef_construction; ef_search at query time) or `ivf` (nlist; nprobe
    at query time). Defaults follow FAISS's usual ones.

    Compression, built from the same float embeddings: `dimensions` keeps the first n of each vector and
    renormalises it (Matryoshka-trained models; None or the full dimension: the vectors as they are);
    `quantization` stores int8 codes (FAISS's SQ8: 8 bits a dimension, ranges trained per dimension), binary
    codes (the sign of each dimension, searched by Hamming distance; `binary-centered`: the sign of each dimension
    once the corpus mean is subtracted, the mean stored with the index and subtracted from the queries too) or
    product codes (`pq_m` sub-vectors of
    `pq_nbits` bits); `rescore` > 0 re-ranks the top max(rescore, k) by the float vectors' inner product.
    """

    kind: str = "flat"
    M: int = 32
    ef_construction: int = 40
    ef_search: int = 64
    nlist: int = 100
    nprobe: int = 8
    dimensions: int | None = None
    quantization: str | None = None
    pq_m: int = 8
    pq_nbits: int = 8
    rescore: int = 0

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise ValueError(f"unknown FAISS index kind {self.kind!r}; use one of {', '.join(INDEX_KINDS)}")
        if self.quantization not in (None, *QUANTIZATIONS):
            raise ValueError(f"unknown quantization {self.quantization!r}; use one of {', '.join(QUANTIZATIONS)}")
        if self.quantization and self.kind == "hnsw":
            raise ValueError("an hnsw index holds float vectors only: use `kind: flat` or `ivf` with `quantization`")
        if self.rescore and not self.quantization:
            raise ValueError("`rescore` re-ranks a quantized index's candidates in float: set `quantization`, or "
                             "drop `rescore` (a float index has nothing to re-score)")

    @classmethod
    def from_config(cls, spec: Mapping[str, Any] | None) -> IndexSpec:
        """The spec of a method's `index` block (absent: exact)."""
        known = {field.name for field in fields(cls)}
        return cls(**{key: value for key, value in (spec or {}).items() if key in known})

    @property
    def name(self) -> str:
        """File stem of the built index: build parameters only, so methods differing in ef_search/nprobe/rescore
        share it."""
        name = {"hnsw": f"hnsw-M{self.M}-efc{self.ef_construction}", "ivf": f"ivf-nlist{self.nlist}"}.get(
            self.kind, "flat")
        if self.dimensions:
            name += f"-d{self.dimensions}"
        if self.quantization == "pq":
            return name + f"-pq{self.pq_m}x{self.pq_nbits}"
        return name + (f"-{self.quantization}" if self.quantization else "")

    @property
    def min_vectors(self) -> int:
        """The fewest vectors the index can be built from: product codes train 2^pq_nbits centroids a sub-vector
        (FAISS stops with a RuntimeError under that); every other index builds from one."""
        return 2 ** self.pq_nbits if self.quantization == "pq" else 1

    @property
    def binary(self) -> bool:
        """Whether the index stores sign bits (plain or centered), searched by Hamming distance."""
        return self.quantization in BINARY_QUANTIZATIONS

    @property
    def compressed(self) -> bool:
        """Whether the index holds fewer or coarser numbers than the encoder's float vectors."""
        return bool(self.dimensions or self.quantization)

    @property
    def build_params(self) -> dict[str, Any]:
        """What building needs (plain values, for a rule's params)."""
        return {key: value for key, value in asdict(self).items() if key in self._keys(BUILD_KEYS)}

    @property
    def settings(self) -> dict[str, Any]:
        """What this index reads, building and searching (a flat float index: its kind alone), sorted."""
        keep = self._keys(BUILD_KEYS) + self._keys(SEARCH_KEYS)
        return dict(sorted((key, value) for key, value in asdict(self).items() if key in keep))

    def _keys(self, by_kind: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
        """The keys of by_kind this index's kind reads, and those of its compression when it is compressed."""
        compression = (("dimensions",) if self.dimensions else ()) + (
            {"pq": ("quantization", "pq_m", "pq_nbits")}.get(self.quantization or "", ("quantization",))
            if self.quantization else ())
        return by_kind[self.kind] + (compression if by_kind is BUILD_KEYS else ("rescore",) * bool(self.quantization))


# The parameters each kind of index reads when it is built, and when it is searched.
BUILD_KEYS = {"flat": ("kind",), "hnsw": ("kind", "M", "ef_construction"), "ivf": ("kind", "nlist")}
SEARCH_KEYS: dict[str, tuple[str, ...]] = {"flat": (), "hnsw": ("ef_search",), "ivf": ("nprobe",)}


def dense_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A dense method's FAISS index settings with the library's defaults filled in, only those its kind reads
    (effective config: a flat index shows no HNSW or IVF parameter)."""
    return {"index": IndexSpec.from_config(spec.get("index")).settings}


def ranking_settings(spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Every setting a method's type reads but its `index` (chunker, encoder, expansion, rewrite, filters, …) as the
    run uses it: the type's defaults filled in, and an empty value (absent, null, [], {}) read as absent, since each
    means the feature is off (`init` writes `filters: []` where the docs' examples leave filters out). Two methods
    alike in these rank the same texts the same way but for their index."""
    settings = method_defaults(spec)

    def normal(value: Any) -> str:
        return json.dumps(None if value in (None, [], {}, ()) else value, sort_keys=True, default=str)

    return tuple((key, normal(settings.get(key))) for key in sorted({"type", *method_type(spec).keys} - {"index"}))


def float_twins(methods: Mapping[str, Mapping[str, Any]]) -> dict[str, str | None]:
    """Of the dense methods given (those searching a FAISS index the workflow builds), each with a compressed index
    -> the method ranking the same texts with the exact float index (equal ranking_settings), or None when there is
    none."""
    flat = {ranking_settings(spec): name for name, spec in sorted(methods.items(), reverse=True)
            if IndexSpec.from_config(spec.get("index")) == IndexSpec()}
    return {name: flat.get(ranking_settings(spec)) for name, spec in sorted(methods.items())
            if IndexSpec.from_config(spec.get("index")).compressed}


def check_dense_method(spec: Mapping[str, Any], dataset: Mapping[str, Any], where: str, source: str) -> None:
    """At start: the index's keys agree (a known kind and quantization; re-scoring only with codes; binary codes a
    whole number of bytes; product codes a whole number of sub-vectors)."""
    try:
        index = IndexSpec.from_config(spec.get("index"))
    except ValueError as error:
        raise InputError(source, f"{where}.index", str(error), "See docs/reference/config.md, `index`.") from None
    dimensions = index.dimensions
    if dimensions and index.binary and dimensions % 8:
        raise InputError(source, f"{where}.index.dimensions", f"is {dimensions}; binary codes need a multiple of 8",
                         f"Use {dimensions - dimensions % 8 or 8}, or another quantization.")
    if dimensions and index.quantization == "pq" and dimensions % index.pq_m:
        raise InputError(source, f"{where}.index.pq_m", f"is {index.pq_m}, which does not divide `dimensions: "
                         f"{dimensions}`", "Pick pq_m among the divisors of the dimension (e.g. 8, 16, 32).")


def check_index_sizes(needs: list[list[Any]], chunks: int, chunker: str, source: str) -> None:
    """Before the corpus is encoded: each index built over a chunker's chunks ([method, index block] of `needs`) can
    be built from as many vectors as the chunker yields (IndexSpec.min_vectors); an IVF index with more lists than
    chunks gets one list a chunk (build_index)."""
    for method, block in needs:
        spec = IndexSpec.from_config(block)
        if chunks < spec.min_vectors:
            bits = max(chunks.bit_length() - 1, 1)
            raise InputError(source, f"methods.{method}.index", f"has product codes of pq_nbits {spec.pq_nbits}, "
                             f"which train {spec.min_vectors} centroids a sub-vector from at least as many chunks, "
                             f"but chunker {chunker!r} yields {chunks}",
                             f"Set `methods.{method}.index.pq_nbits: {bits}` (2^{bits} <= {chunks}), use "
                             "`quantization: int8`, or a chunker that yields more chunks.")


def truncated(vectors: np.ndarray, dimensions: int | None) -> np.ndarray:
    """The first `dimensions` of each vector, renormalised to unit length (float32); the vectors as they are when
    nothing is cut (None, or their full dimension), so such an index equals the float one bit for bit."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if dimensions is None or dimensions == vectors.shape[1]:
        return vectors
    if dimensions > vectors.shape[1]:
        raise ValueError(f"`dimensions: {dimensions}` exceeds the encoder's {vectors.shape[1]} dimensions; "
                         f"set at most {vectors.shape[1]}")
    cut = vectors[:, :dimensions]
    norms = np.linalg.norm(cut, axis=1, keepdims=True)
    return np.ascontiguousarray(cut / np.where(norms > 0, norms, 1), dtype=np.float32)


def binary_codes(vectors: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """One bit per dimension (1 where the value is positive; with `mean`, where it is above the mean's), packed 8 to
    a byte, as FAISS's binary indexes read."""
    return np.packbits(vectors > (0 if mean is None else mean), axis=1)


@dataclass
class CenteredBinaryIndex:
    """A FAISS binary index over the signs of the corpus vectors minus their mean, with that mean (float32, one value
    a dimension): queries are centered by the same mean before their signs are taken (search)."""

    index: Any
    mean: np.ndarray

    @property
    def d(self) -> int:
        """The dimension of the vectors (bits a code), as a FAISS index says it."""
        return int(self.index.d)

    @property
    def ntotal(self) -> int:
        """The vectors indexed, as a FAISS index says it."""
        return int(self.index.ntotal)


# A centered binary index's file: this magic, the mean's dimension (uint32), the mean (float32), then the FAISS
# binary index as faiss.serialize_index_binary writes it. One file, so the mean cannot be lost or mismatched.
CENTERED_MAGIC = b"RBCB"


def build_index(vectors: np.ndarray, spec: IndexSpec = IndexSpec()) -> Any:
    """An inner-product index (a Hamming one for binary codes); built single-threaded with a fixed IVF seed, so the
    same vectors give the same index."""
    import faiss  # here, not at the top: the workflow imports this module (IndexSpec) when it parses

    vectors = truncated(vectors, spec.dimensions)
    dim = vectors.shape[1]
    if spec.binary and dim % 8:
        raise ValueError(f"binary codes need a dimension divisible by 8; the vectors have {dim}: set `dimensions`")
    if spec.quantization == "pq" and dim % spec.pq_m:
        raise ValueError(f"`pq_m: {spec.pq_m}` must divide the vectors' {dim} dimensions")
    nlist = max(1, min(spec.nlist, len(vectors)))
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # HNSW insertion and k-means are order-dependent when multi-threaded
    try:
        if spec.quantization == "binary":
            return _binary_index(faiss, binary_codes(vectors), dim, spec.kind, nlist)
        if spec.quantization == "binary-centered":
            mean = vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
            return CenteredBinaryIndex(_binary_index(faiss, binary_codes(vectors, mean), dim, spec.kind, nlist), mean)
        index: faiss.Index
        if spec.kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, spec.M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = spec.ef_construction
        elif spec.kind == "ivf" or spec.quantization == "pq":
            # exhaustive product codes are one inverted list: FAISS's IndexPQ takes no filter (ID selector)
            nlist = nlist if spec.kind == "ivf" else 1
            quantizer = faiss.IndexFlatIP(dim)
            if spec.quantization == "int8":
                index = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit,
                                                      faiss.METRIC_INNER_PRODUCT)
            elif spec.quantization == "pq":
                index = faiss.IndexIVFPQ(quantizer, dim, nlist, spec.pq_m, spec.pq_nbits, faiss.METRIC_INNER_PRODUCT)
                index.pq.cp.seed = IVF_SEED
                index.pq.cp.min_points_per_centroid = 1
            else:
                index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.cp.seed = IVF_SEED
            index.cp.min_points_per_centroid = 1  # small corpora: no warning spam, same clustering
        elif spec.quantization == "int8":
            index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexFlatIP(dim)
        if not index.is_trained:
            index.train(vectors)
        index.add(vectors)
    finally:
        faiss.omp_set_num_threads(threads)
    return index


def _binary_index(faiss: Any, codes: np.ndarray, dim: int, kind: str, nlist: int) -> Any:
    """A FAISS binary index over packed codes: exhaustive, or inverted lists (`ivf`) trained with the fixed seed."""
    if kind == "ivf":
        index = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(dim), dim, nlist)
        index.cp.seed = IVF_SEED
        index.cp.min_points_per_centroid = 1
        index.train(codes)
    else:
        index = faiss.IndexBinaryFlat(dim)
    index.add(codes)
    return index


def save_index(index: Any, path: Path) -> None:
    """Write a FAISS index (float, binary or centered binary) atomically, so a killed job leaves no half-written
    index."""
    import faiss

    if isinstance(index, CenteredBinaryIndex):
        body = faiss.serialize_index_binary(index.index).tobytes()
        head = CENTERED_MAGIC + np.uint32(len(index.mean)).tobytes() + index.mean.astype("<f4").tobytes()
        write_atomically(path, lambda tmp: Path(tmp).write_bytes(head + body))
        return
    write = faiss.write_index_binary if isinstance(index, faiss.IndexBinary) else faiss.write_index
    write_atomically(path, lambda tmp: write(index, str(tmp)))


def load_index(path: Path) -> Any:
    """Read an index written by save_index (a float, a binary or a centered binary one)."""
    import faiss

    with open(path, "rb") as handle:  # a binary index starts with "IB" (IBxF flat, IBwF inverted lists)
        magic = handle.read(4)
    if magic == CENTERED_MAGIC:
        data = Path(path).read_bytes()
        dim = int(np.frombuffer(data, dtype="<u4", count=1, offset=4)[0])
        mean = np.frombuffer(data, dtype="<f4", count=dim, offset=8).astype(np.float32)
        body = np.frombuffer(data, dtype=np.uint8, offset=8 + 4 * dim)
        return CenteredBinaryIndex(faiss.deserialize_index_binary(body.copy()), mean)
    return faiss.read_index_binary(str(path)) if magic[:2] == b"IB" else faiss.read_index(str(path))


def _search_params(index: faiss.Index, spec: IndexSpec, k: int, selector: Any = None) -> Any:
    """Query-time parameters for the index type, with an optional ID selector. HNSW explores
    max(ef_search, k) candidates (as hnswlib does): FAISS would otherwise return fewer than k results."""
    import faiss

    if isinstance(index, faiss.IndexHNSW):
        params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # absent from faiss's stubs only
        params.efSearch = max(spec.ef_search, k)
    elif isinstance(index, (faiss.IndexIVF, faiss.IndexBinaryIVF)):
        params = faiss.SearchParametersIVF()
        params.nprobe = spec.nprobe
    else:
        params = faiss.SearchParameters()
    if selector is not None:
        params.sel = selector
    return params


def search(index: Any, queries: np.ndarray, k: int, spec: IndexSpec = IndexSpec(),
           allowed: ChunkMasks | None = None, vectors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k positions and scores per query; -1 where fewer than k vectors qualify.

    `allowed` restricts each query to some vectors before ranking (a FAISS ID selector, not a post-filter), so the
    list still reaches k whenever k vectors pass. Queries sharing a mask are searched together. Queries are cut
    as the index's vectors were (`dimensions`); binary codes score d − 2·Hamming (the inner product of ±1
    vectors; a centered index's queries lose its stored mean first). With `spec.rescore`, the top max(rescore, k)
    are re-ranked by their inner product with the float `vectors` (the index's input embeddings, uncut: required
    then).
    """
    import faiss

    k = min(k, index.ntotal)
    depth = min(max(spec.rescore, k), index.ntotal) if spec.rescore else k
    queries = truncated(queries, spec.dimensions)
    mean = None
    if isinstance(index, CenteredBinaryIndex):
        index, mean = index.index, index.mean
    searched = binary_codes(queries, mean) if isinstance(index, faiss.IndexBinary) else queries
    positions = np.full((len(queries), depth), -1, dtype=np.int64)
    scores = np.full((len(queries), depth), -np.inf, dtype=np.float32)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # one thread: the same results on every run
    try:
        groups = [(np.arange(len(queries)), None)] if allowed is None else [
            (allowed.rows(g), faiss.IDSelectorBatch(np.flatnonzero(mask).astype(np.int64)))
            for g, mask in enumerate(allowed.masks) if len(allowed.rows(g)) and mask.any()]
        for rows, selector in groups:
            s, p = index.search(searched[rows], depth, params=_search_params(index, spec, depth, selector))
            positions[rows], scores[rows] = p, s
    finally:
        faiss.omp_set_num_threads(threads)
    if isinstance(index, faiss.IndexBinary):
        scores = np.where(positions >= 0, index.d - 2 * scores.astype(np.float32), -np.inf).astype(np.float32)
    if not spec.rescore:
        return positions, scores
    if vectors is None:
        raise ValueError("re-scoring needs the float vectors the index was built from")
    return rescored(positions, queries, truncated(vectors, spec.dimensions), k)


def rescored(candidates: np.ndarray, queries: np.ndarray, vectors: np.ndarray, k: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """The top k of each query's candidates (-1: none) by float inner product, ties broken by position."""
    positions = np.full((len(queries), k), -1, dtype=np.int64)
    scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    for i, row in enumerate(candidates):
        found = row[row >= 0]
        exact = vectors[found] @ queries[i]
        order = np.lexsort((found, -exact))[:k]
        positions[i, :len(order)], scores[i, :len(order)] = found[order], exact[order]
    return positions, scores


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
