"""What it takes to serve a method: the bytes it holds in memory and on disk to answer a question, the dimensions of
the dense vectors it compares with a question, and what its calls to priced models cost per 1,000 questions.

Counted are the files a method's query jobs read (a FAISS index file, BM25 or sparse arrays, a Lucene index folder,
a vector database folder, the float vectors a re-scoring index or a bi-encoder scorer reads), its inputs' too
(a fusion or a reranker serves its first stages); never the vectors an index was built from. The workflow names
those files per method (`served_files()` in workflow/rules/footprint.smk) and the records of the jobs that call a
priced model (`priced_records`, read by read_spends); the cost page, the vector-size page and the serving table
read this module's frame: `footprint(served_files(), read_spends(priced_records), cost.prices)`. Models (encoder
and reranker weights) are not counted: several methods share one.

One table, one row per method (FOOTPRINT_COLUMNS):

- `disk_bytes`: the bytes of those files on disk (a folder: every file under it);
- `ram_bytes`: what loading them takes in memory: a FAISS index is read whole (its file's bytes), a `.npy` array
  its data (shape × item size), an `.npz` archive its arrays uncompressed, a folder its files (a Lucene or LanceDB
  index is memory-mapped: the most the operating system may hold);
- `dimensions`: of the FAISS indexes it searches (a truncated index's: 128 for `-d128`; a re-scoring index
  compares the float vectors cut alike; binary codes: one bit a dimension), else of the float vectors it reads (a
  bi-encoder scorer's); the largest when it compares several; NaN for a method without dense vectors;
- `tokens_per_query`, `requests_per_query`: what its query jobs sent to remote models per question (Spend);
- `usd_per_1k`: with a price table (`cost.prices`: model -> `per_1m_input_tokens`, `per_request`), the money of
  those requests and tokens per 1,000 questions (0 for a method that calls no remote model; NaN without prices,
  when a model it calls has no price, or when its calls were not observed in the run).
"""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.errors import InputError
from rankbench.records.timing import read_timing

FOOTPRINT_COLUMNS = ["method", "ram_bytes", "disk_bytes", "dimensions", "tokens_per_query", "requests_per_query",
                     "usd_per_1k"]
# Price table keys of one model (`cost.prices.<model>`), in dollars.
PRICE_KEYS = ("per_1m_input_tokens", "per_request")


@dataclass(frozen=True)
class Spend:
    """What one query-side job of a method sent to a remote model: `requests` requests carrying `tokens` input tokens
    (None: the server reported none) for `questions` questions (0: every answer came from a cache, nothing seen)."""

    model: str
    questions: int
    requests: int
    tokens: int | None


@dataclass(frozen=True)
class FileSize:
    """One served file or folder: bytes on disk, bytes in memory once loaded, dimensions of its vectors (None)."""

    disk: int
    ram: int
    dimensions: int | None
    index: bool  # a FAISS index: its dimensions are what the method searches


def file_size(path: str | Path) -> FileSize:
    """The disk and memory bytes of one served file or folder, with the dimensions of the vectors it holds."""
    path = Path(path)
    if path.is_dir():
        total = sum(item.stat().st_size for item in sorted(path.rglob("*")) if item.is_file())
        return FileSize(total, total, None, False)
    try:
        disk = path.stat().st_size
        if path.suffix == ".faiss":
            return FileSize(disk, disk, _faiss_dimensions(path), True)
        if path.suffix == ".npy":
            with open(path, "rb") as handle:
                shape, dtype = _npy_header(handle)
            return FileSize(disk, int(np.prod(shape)) * dtype.itemsize, shape[1] if len(shape) == 2 else None, False)
        if path.suffix == ".npz":
            with zipfile.ZipFile(path) as archive:
                ram = 0
                for member in archive.namelist():
                    with archive.open(member) as handle:
                        shape, dtype = _npy_header(handle)
                    ram += int(np.prod(shape)) * dtype.itemsize
            return FileSize(disk, ram, None, False)
    except (OSError, ValueError, zipfile.BadZipFile, struct.error) as error:
        raise InputError(path, None, f"cannot be measured as a served index ({error})",
                         "Delete it and rerun the rule that writes it.") from None
    return FileSize(disk, disk, None, False)


def _npy_header(handle: Any) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of a .npy stream, from its header alone (the data is not read)."""
    version = np.lib.format.read_magic(handle)
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = reader(handle)
    return tuple(shape), dtype


def _faiss_dimensions(path: Path) -> int:
    """The dimension FAISS writes after an index's four-byte type code (float and binary indexes alike, wrapped ones
    too: the header comes first); for a binary index, its bits (one per dimension)."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    if len(head) < 8:
        raise ValueError("shorter than a FAISS header")
    return int(struct.unpack("<i", head[4:8])[0])


def spend_of(model: str | None, record: Mapping[str, Any]) -> Spend | None:
    """What one query-side job's record says it sent to a remote model (None: it calls none).

    An embedding job's usage record (retrieval/encoders/api.py: `model`, `sent`, `tokens`; model None here): as a
    service sends each question alone, a question is one request of its tokens; texts found in the API cache were
    not sent and are not seen. A reranker's timing record (records/timing.py: `calls`, `tokens`; model: its LLM's):
    its calls and tokens over the questions it answered; a response found in the LLM cache is not seen either, and
    a job that sent nothing leaves the cost unseen (NaN), not free.
    """
    if "sent" in record:
        if not record.get("model") or not record.get("endpoint"):
            return None  # an in-process encoder
        return Spend(str(record["model"]), int(record["sent"]), int(record["sent"]), record.get("tokens"))
    if model is None:
        return None
    calls = int(record.get("calls", 0))
    return Spend(model, len(record.get("questions", {})) if calls else 0, calls, record.get("tokens"))


def read_spends(records: Mapping[str, Sequence[Sequence[Any]]]) -> dict[str, list[Spend]]:
    """Per method: the Spends of its jobs' records, given as [model, path] (`priced_records` in
    workflow/rules/footprint.smk: model None for an embedding job's usage record, which names its own; else the
    LLM of a reranker whose timing record it is)."""
    spends: dict[str, list[Spend]] = {}
    for method, found in records.items():
        spends[method] = []
        for model, path in found:
            try:
                record = json.loads(Path(path).read_text(encoding="utf-8")) if model is None else read_timing(path)
            except (OSError, ValueError) as error:
                raise InputError(path, None, f"is not a usage record ({error})",
                                 "Delete it and rerun the rule that writes it.") from None
            spend = spend_of(model, record)
            if spend is not None:
                spends[method].append(spend)
    return spends


def footprint(served: Mapping[str, Sequence[str | Path]], spends: Mapping[str, Sequence[Spend]] | None = None,
              prices: Mapping[str, Mapping[str, float]] | None = None) -> pd.DataFrame:
    """FOOTPRINT_COLUMNS per method of `served`, sorted by method.

    served: method -> the files and folders its query jobs and its inputs' read to answer a question (none: a method
    served elsewhere, e.g. a search endpoint: its bytes are NaN); a file named twice counts once. spends: method ->
    what its query jobs and its inputs' sent to remote models (Spend); prices: model -> dollars `per_1m_input_tokens`
    and `per_request` (a key left out costs 0), or None for no money column (usd_per_1k NaN throughout).
    """
    spends = spends or {}
    sizes: dict[str, FileSize] = {}
    rows = []
    for method in sorted(served):
        files = sorted(dict.fromkeys(str(path) for path in served[method]))
        measured = [sizes.setdefault(path, file_size(path)) for path in files]
        searched = [size.dimensions for size in measured if size.index and size.dimensions] or [
            size.dimensions for size in measured if size.dimensions]
        tokens, requests, usd = _money(spends.get(method, ()), prices)
        rows.append({"method": method,
                     "ram_bytes": float(sum(size.ram for size in measured)) if measured else np.nan,
                     "disk_bytes": float(sum(size.disk for size in measured)) if measured else np.nan,
                     "dimensions": float(max(searched)) if searched else np.nan,
                     "tokens_per_query": tokens, "requests_per_query": requests, "usd_per_1k": usd})
    return pd.DataFrame(rows, columns=FOOTPRINT_COLUMNS)


def _money(spends: Sequence[Spend], prices: Mapping[str, Mapping[str, float]] | None) -> tuple[float, float, float]:
    """Tokens and requests per question summed over a method's jobs, and their dollars per 1,000 questions."""
    if any(spend.questions <= 0 for spend in spends):
        return np.nan, np.nan, np.nan  # a job's calls were all answered from a cache: what a question costs is unseen
    requests = sum(spend.requests / spend.questions for spend in spends)
    unknown_tokens = any(spend.tokens is None for spend in spends)
    tokens = np.nan if unknown_tokens else sum((spend.tokens or 0) / spend.questions for spend in spends)
    if prices is None or any(spend.model not in prices for spend in spends):
        return tokens, requests, np.nan
    usd = 0.0
    for spend in spends:
        price = prices[spend.model]
        per_token = price.get("per_1m_input_tokens", 0.0) / 1e6
        if spend.tokens is None and per_token:
            return tokens, requests, np.nan
        usd += ((spend.tokens or 0) * per_token + spend.requests * price.get("per_request", 0.0)) / spend.questions
    return tokens, requests, 1000 * usd
