"""Dense retrieval through a vector database that RAG teams deploy (LanceDB, embedded): a collection built from
rankbench's own chunk embeddings, searched exactly (= FAISS flat) or through the engine's ANN index, or a team's
existing collection, which rankbench only reads."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.errors import InputError
from rankbench.io.ranked_lists import RUN_COLUMNS, order_by_trec_rule
from rankbench.retrieval.dense import recall_against_exact

# Engine -> the distribution that provides it (the `vectordb` extra).
ENGINES = {"lancedb": "lancedb"}
INDEX_KINDS = ("flat", "ivf_flat", "ivf_pq", "ivf_hnsw_sq")
# The table a built collection holds, and its columns (an existing collection names its own).
TABLE, ID_FIELD, VECTOR_FIELD = "chunks", "id", "vector"
# Distance -> score (higher is better): dot and cosine distances are 1 - similarity, l2 is squared distance.
METRICS = ("dot", "cosine", "l2")


@dataclass(frozen=True)
class VectorIndex:
    """The engine's index: `flat` (exact: no index, every vector compared) or an ANN index (IVF with flat, PQ or
    HNSW+SQ partitions); build parameters (partitions, sub_vectors, m, ef_construction) and query-time ones (nprobes,
    ef, refine_factor: re-score that many times k candidates exactly, 0 = off). Defaults are LanceDB's own."""

    kind: str = "flat"
    partitions: int = 32
    sub_vectors: int = 16
    m: int = 20
    ef_construction: int = 300
    nprobes: int = 20
    ef: int = 64
    refine_factor: int = 0

    def __post_init__(self) -> None:
        if self.kind not in INDEX_KINDS:
            raise ValueError(f"unknown vector index kind {self.kind!r}; use one of {', '.join(INDEX_KINDS)}")

    @classmethod
    def from_config(cls, spec: Mapping[str, Any] | None) -> VectorIndex:
        """The spec of a method's `vector_index` block (absent: exact)."""
        known = {field.name for field in fields(cls)}
        return cls(**{key: value for key, value in (spec or {}).items() if key in known})

    @property
    def build_params(self) -> dict[str, Any]:
        """What building needs (plain values, for a rule's params): methods differing only at query time share it."""
        keep = {"flat": [], "ivf_flat": ["partitions"], "ivf_pq": ["partitions", "sub_vectors"],
                "ivf_hnsw_sq": ["partitions", "m", "ef_construction"]}[self.kind]
        return {"kind": self.kind, **{key: getattr(self, key) for key in keep}}

    @property
    def name(self) -> str:
        """File stem of the built collection, from the build parameters."""
        short = {"partitions": "p", "sub_vectors": "sv", "m": "m", "ef_construction": "efc"}
        params = self.build_params
        return "-".join([self.kind] + [f"{short[key]}{value}" for key, value in params.items() if key != "kind"])


@dataclass(frozen=True)
class Collection:
    """An existing collection rankbench only reads: the database `uri` (a folder), the table `name`, its id and vector
    columns, and the distance its vectors are compared with."""

    uri: str
    name: str
    id_field: str = ID_FIELD
    vector_field: str = VECTOR_FIELD
    metric: str = "dot"


def database_folder(manifest: str | Path) -> Path:
    """The database a built collection's manifest describes: the folder beside it, of the same stem."""
    return Path(manifest).with_suffix(".lancedb")


def searched_collection(existing: Mapping[str, Any] | None, manifest: str | Path | None) -> Collection:
    """The collection a method searches: the existing one its config names, else the one the workflow built."""
    if existing:
        return Collection(**existing)
    assert manifest is not None, "a built collection has a manifest"
    return Collection(uri=str(database_folder(manifest)), name=TABLE)


def vectordb_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A vectordb method's index settings with the defaults filled in (effective config); an existing collection's
    columns and metric likewise."""
    settings: dict[str, Any] = {}
    if spec.get("collection"):
        settings["collection"] = dict(sorted(asdict(Collection(**spec["collection"])).items()))
    else:
        settings["vector_index"] = dict(sorted(asdict(VectorIndex.from_config(spec.get("vector_index"))).items()))
    return settings


def engine_version(engine: str) -> str:
    """The installed version of an engine's distribution."""
    return metadata.version(ENGINES[engine])


def check_vectordb_method(spec: Mapping[str, Any], dataset: Mapping[str, Any], where: str, source: str) -> None:
    """At start: the engine is known and installed; an ANN index and an existing collection are not both set; an
    existing collection's database, table and columns exist (read only, never written)."""
    engine = spec["engine"]
    if engine not in ENGINES:
        raise InputError(source, f"{where}.engine", f"names engine {engine!r}, which rankbench does not drive",
                         f"Use one of: {', '.join(ENGINES)}.")
    if importlib.util.find_spec(ENGINES[engine]) is None:
        raise InputError(source, f"{where}.engine", f"needs {ENGINES[engine]}, which is not installed",
                         "Install the extra: pip install 'rankbench[vectordb]'.")
    collection = spec.get("collection")
    if collection and spec.get("vector_index"):
        raise InputError(source, f"{where}.vector_index", "is set beside `collection`: an existing collection is "
                         "searched with the index it has", "Drop `vector_index`, or drop `collection` to have the "
                         "workflow build the collection from the chunk embeddings.")
    if collection:
        check_collection(Collection(**collection), f"{where}.collection", source)


def check_collection(collection: Collection, where: str, source: str) -> None:
    """The database folder, its table and the table's id and vector columns exist; else one InputError."""
    if not Path(collection.uri).is_dir():
        raise InputError(source, f"{where}.uri", f"{collection.uri!r} is not an existing folder",
                         "Give the folder of the LanceDB database (relative paths start from the project folder).")
    schema = _open(collection.uri, collection.name, where, source).schema
    for key, column in (("id_field", collection.id_field), ("vector_field", collection.vector_field)):
        if column not in schema.names:
            raise InputError(source, f"{where}.{key}", f"names column {column!r}, which table {collection.name!r} "
                             f"does not have (it has {', '.join(schema.names)})", f"Set `{key}` to one of them.")


def _open(uri: str, name: str, where: str, source: str) -> Any:
    import lancedb  # here: the workflow imports this module when it parses

    database = lancedb.connect(uri, read_consistency_interval=None)
    if name not in database.list_tables().tables:
        raise InputError(source, f"{where}.name", f"names table {name!r}, which database {uri!r} does not hold",
                         f"Use one of: {', '.join(database.list_tables().tables) or 'none (the database is empty)'}.")
    return database.open_table(name)


def build_collection(vectors: np.ndarray, chunk_ids: pd.Series, folder: Path, index: VectorIndex) -> dict[str, Any]:
    """A fresh LanceDB database in `folder` with one table (chunk id, vector) and, unless flat, its ANN index over dot
    products; returns the manifest (engine and version, table, rows, dimension, index, table version)."""
    import lancedb
    import pyarrow as pa

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if index.kind == "ivf_pq" and vectors.shape[1] % index.sub_vectors:
        raise InputError(folder, "vector_index.sub_vectors", f"{index.sub_vectors} does not divide the dimension "
                         f"{vectors.shape[1]}", "Choose sub_vectors that divides the encoder's dimension.")
    shutil.rmtree(folder, ignore_errors=True)  # a killed build leaves no half-written table behind
    database = lancedb.connect(folder)
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])
    table = database.create_table(TABLE, pa.table({ID_FIELD: pa.array(chunk_ids.astype(str)), VECTOR_FIELD: column}))
    if index.kind != "flat":
        table.create_index(VECTOR_FIELD, config=_index_config(index, len(vectors)))
    return {"engine": "lancedb", "version": engine_version("lancedb"), "table": TABLE, "rows": len(vectors),
            "dimension": int(vectors.shape[1]), "index": index.build_params, "table_version": int(table.version)}


def _index_config(index: VectorIndex, rows: int) -> Any:
    """LanceDB's config of an ANN index over dot products (no more partitions than rows)."""
    from lancedb.index import HnswSq, IvfFlat, IvfPq

    partitions = min(index.partitions, rows)
    if index.kind == "ivf_pq":
        return IvfPq(distance_type="dot", num_partitions=partitions, num_sub_vectors=index.sub_vectors)
    if index.kind == "ivf_hnsw_sq":
        return HnswSq(distance_type="dot", num_partitions=partitions, m=index.m, ef_construction=index.ef_construction)
    return IvfFlat(distance_type="dot", num_partitions=partitions)


def open_table(collection: Collection, source: str) -> Any:
    """A collection's table, opened to read (`source` names it in an error)."""
    return _open(collection.uri, collection.name, "collection", source)


def table_dimension(table: Any, vector_field: str = VECTOR_FIELD) -> int:
    """The width of a table's vector column."""
    return int(table.schema.field(vector_field).type.list_size)


def search_provenance(table: Any, collection: Collection, existing: bool, index: VectorIndex) -> dict[str, Any]:
    """What a vectordb run was searched in, for its run file: the engine and its version and, for an existing
    collection, its database, table and the table version read; for a built one, its index kind and parameters."""
    engine = {"engine": "lancedb", "version": engine_version("lancedb")}
    if existing:
        return {**engine, "collection": {"uri": collection.uri, "name": collection.name},
                "table_version": int(table.version)}
    return {**engine, "index": index.build_params}


def engine_entry(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The page header's entry of the database a vectordb run was searched in (its provenance, search_provenance)."""
    if "collection" in provenance:
        facts = [["database", provenance["collection"]["uri"]], ["table", provenance["collection"]["name"]],
                 ["table version", str(provenance["table_version"])]]
    else:
        params = ", ".join(f"{key} {value}" for key, value in provenance["index"].items() if key != "kind")
        facts = [["index", provenance["index"]["kind"] + (f" ({params})" if params else " (exact)")]]
    return {"engine": f"LanceDB {provenance['version']}", "facts": facts}


def search_table(table: Any, queries: np.ndarray, k: int, index: VectorIndex = VectorIndex(), exact: bool = False,
                 collection: Collection | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k ids (object array, None where fewer than k rows) and scores (higher is better) per query, through the
    table's ANN index with the query-time parameters (HNSW exploring max(ef, k) candidates), or exactly (every
    vector compared) when `exact` or flat; the columns and metric are the collection's (default: a built one's)."""
    vector_field, id_field, metric = ((collection.vector_field, collection.id_field, collection.metric) if collection
                                      else (VECTOR_FIELD, ID_FIELD, "dot"))
    k = min(k, table.count_rows())
    ids = np.full((len(queries), k), None, dtype=object)
    scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    if not len(queries) or not k:
        return ids, scores
    query = (table.search(list(np.asarray(queries, dtype=np.float32)), vector_column_name=vector_field)
             .distance_type(metric).limit(k).select([id_field, "_distance"]))
    if exact or index.kind == "flat":
        query = query.bypass_vector_index()
    else:
        query = query.nprobes(index.nprobes).ef(max(index.ef, k))  # HNSW explores at least k (LanceDB requires it)
        if index.refine_factor:
            query = query.refine_factor(index.refine_factor)
    found = query.to_arrow().to_pandas()
    if "query_index" not in found:  # LanceDB leaves it out when one query is sent
        found["query_index"] = 0
    found["score"] = -found["_distance"] if metric == "l2" else 1.0 - found["_distance"]
    found = order_by_trec_rule(found.rename(columns={"query_index": "qid"}), id_column=id_field)
    rows, rank = found["qid"].to_numpy(), found["rank"].to_numpy() - 1
    ids[rows, rank] = found[id_field].astype(str).to_numpy()
    scores[rows, rank] = found["score"].to_numpy(dtype=np.float32)
    return ids, scores


def ann_recall(table: Any, queries: np.ndarray, ks: Sequence[int], index: VectorIndex) -> pd.DataFrame:
    """Recall@k of the table's ANN index (with the query-time parameters) against exact search of the same table."""
    depth = max(ks)
    approximate, _ = search_table(table, queries, depth, index)
    exact, _ = search_table(table, queries, depth, index, exact=True)
    both = np.concatenate([approximate.reshape(-1), exact.reshape(-1)])
    codes, _ = pd.factorize(pd.Series(both, dtype=object))  # None -> -1, as recall_against_exact expects
    approximate_codes, exact_codes = codes[:approximate.size], codes[approximate.size:]
    return recall_against_exact(approximate_codes.reshape(approximate.shape), exact_codes.reshape(exact.shape), ks)


def run_from_ids(qids: pd.Series, ids: np.ndarray, scores: np.ndarray, chunks: pd.DataFrame,
                 depth: int) -> pd.DataFrame:
    """A run from per-query result ids: an id is a chunk id of the method's chunker, else a document id of the
    corpus (then at document grain only), else an id the corpus does not hold, kept as it is (it scores 0, as an
    external run's unknown documents do)."""
    width = ids.shape[1]
    flat_ids, flat_scores = ids.reshape(-1), scores.reshape(-1).astype(np.float64)
    keep = np.array([value is not None for value in flat_ids], dtype=bool)
    found = flat_ids[keep].astype(str)
    doc_of_chunk = pd.Series(chunks["doc_id"].to_numpy(), index=chunks["chunk_id"].astype(str))
    doc_of_chunk = doc_of_chunk[~doc_of_chunk.index.duplicated()]
    doc_ids = doc_of_chunk.reindex(found).to_numpy(dtype=object)
    doc_ids = np.where(pd.isna(doc_ids), found, doc_ids)
    run = pd.DataFrame({"qid": np.repeat(np.asarray(qids, dtype=object), width)[keep], "rank": 0,
                        "chunk_id": found, "doc_id": doc_ids, "score": flat_scores[keep]}, columns=RUN_COLUMNS)
    return order_by_trec_rule(run, depth=depth)
