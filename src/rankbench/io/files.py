"""Atomic writes: every output goes to a temporary file in the same folder, then is renamed into place; the
text formats rankbench writes (JSONL, CSV safe to open in a spreadsheet); and the one reader of text files that may
come gzipped (runs, qrels)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rankbench.errors import InputError

PARQUET_METADATA = b"rankbench"  # the schema metadata key of what write_parquet stores beside a table

def write_atomically(path: str | Path, write: Callable[[Path], object]) -> None:
    """Call write(tmp) and rename tmp to path, so a killed job never leaves a half-written output."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_folder_atomically(folder: str | Path, write: Callable[[Path], object]) -> None:
    """Call write(staging) on a new folder beside `folder` and rename it to `folder` (which must not exist, or be
    empty): a failure or a kill never leaves a half-written folder under that name."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        mask = os.umask(0)
        os.umask(mask)
        staging.chmod(0o777 & ~mask)  # mkdtemp's folder is private; the folder it becomes is not
        write(staging)
        if folder.is_dir():
            folder.rmdir()  # only an empty one
        staging.replace(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def sweep_temporaries(folder: str | Path) -> None:
    """Delete the temporary files write_atomically leaves when killed; only call it while no writer can be alive
    (e.g. under the folder's lock)."""
    for stale in Path(folder).glob(".*.tmp"):
        stale.unlink(missing_ok=True)


def corpus_record(documents: Path | str) -> Path:
    """Beside documents.parquet: the sha256 of the corpus file it was loaded (and so validated) from. Not a workflow
    output, like the frozen records: it only lets a start-of-run check skip reparsing an unchanged corpus. Here, not in
    project.start_checks, so that the per-method export jobs read it without importing the start checks."""
    return Path(documents).with_name(".corpus-sha256")


def write_parquet(frame: pd.DataFrame, path: str | Path, metadata: Mapping[str, Any] | None = None) -> None:
    """Parquet with zstd, without the pandas index; `metadata` (JSON) goes into the file's schema, under
    PARQUET_METADATA (e.g. a run's provenance)."""
    if metadata is None:
        write_atomically(path, lambda tmp: frame.to_parquet(tmp, index=False, compression="zstd"))
        return
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           PARQUET_METADATA: json.dumps(metadata, sort_keys=True).encode()})
    write_atomically(path, lambda tmp: pq.write_table(table, tmp, compression="zstd"))


def parquet_metadata(path: str | Path) -> dict[str, Any]:
    """What write_parquet stored in a file's schema ({} for none)."""
    stored = (pq.read_schema(path).metadata or {}).get(PARQUET_METADATA)
    return json.loads(stored) if stored else {}


def write_text(text: str, path: str | Path) -> None:
    """A UTF-8 text file."""
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def jsonl_text(records: Iterable[Mapping[str, Any]], sort_keys: bool = False) -> str:
    """One JSON object a line, UTF-8 as written (not escaped); the JSONL that io.loaders.read_jsonl reads."""
    return "".join(json.dumps(dict(record), ensure_ascii=False, sort_keys=sort_keys) + "\n" for record in records)


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection"), quoted or not.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CSV_GUARD = "'"  # what neutralises such a cell: shown as text, and stripped again by our CSV readers


def formula_safe(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string starting like a formula gets CSV_GUARD in front (so does one
    that already starts with the guard and then such a character, so `unguarded` restores every string exactly);
    numbers, and strings that are plain numbers (-0.5), are left as they are."""
    if not isinstance(value, str) or not (value.startswith(FORMULA_START) or _looks_guarded(value)):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return CSV_GUARD + value


def unguarded(value: str) -> str:
    """A cell read from a CSV file as it was before formula_safe."""
    return value[1:] if _looks_guarded(value) else value


def _looks_guarded(value: str) -> bool:
    return value.startswith(CSV_GUARD) and value[1:2] in (*FORMULA_START, CSV_GUARD) and len(value) > 1


def csv_text(frame: pd.DataFrame, **options: Any) -> str:
    """A frame as CSV text (no index, `\n` line ends) with every text cell formula_safe: the one way rankbench
    writes a CSV file a person may open in a spreadsheet."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(formula_safe)
    return safe.to_csv(index=False, lineterminator="\n", **options)


def write_jsonl(records: Iterable[Mapping[str, Any]], path: str | Path, sort_keys: bool = False) -> None:
    """Records as a JSONL file (jsonl_text)."""
    write_text(jsonl_text(records, sort_keys), path)


def write_npy(array: np.ndarray, path: str | Path) -> None:
    """A .npy array (np.save would add a suffix to the temporary name, so write through a handle)."""
    def save(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.save(handle, array)
    write_atomically(path, save)



def write_npy_rows(parts: Iterable[np.ndarray], rows: int, path: str | Path) -> None:
    """A .npy of `rows` rows given part by part (same dtype and row shape, in order): the bytes of write_npy of their
    concatenation, without ever holding it (a corpus's vectors, merged from shards)."""
    def save(tmp: Path) -> None:
        written = 0
        with open(tmp, "wb") as handle:
            for part in parts:
                if written == 0:
                    header = np.lib.format.header_data_from_array_1_0(part)
                    np.lib.format.write_array_header_1_0(handle, {**header, "shape": (rows, *part.shape[1:])})
                handle.write(np.ascontiguousarray(part).data)
                written += len(part)
        if written != rows:
            raise ValueError(f"{path}: {written} rows given for an array of {rows}")
    write_atomically(path, save)


def npy_row_blocks(path: str | Path, block_rows: int = 65_536) -> Iterator[np.ndarray]:
    """The rows of a .npy file, a block at a time, read (not memory-mapped: mapped pages would stay resident)."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran_order, dtype = read_header(handle)
        if fortran_order:
            raise ValueError(f"{path}: a Fortran-ordered array cannot be read by rows")
        row_items = int(np.prod(shape[1:], dtype=np.int64))
        for start in range(0, shape[0], block_rows):
            count = min(block_rows, shape[0] - start)
            yield np.fromfile(handle, dtype=dtype, count=count * row_items).reshape(count, *shape[1:])


# Fixed member timestamps of write_npz: the same arrays give the same bytes.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def write_npz(arrays: Mapping[str, np.ndarray], path: str | Path) -> None:
    """np.savez without pickle, with fixed member timestamps and order, so the same arrays give the same bytes."""
    def save(tmp: Path) -> None:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as archive:
            for name in sorted(arrays):
                info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
                with archive.open(info, "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
    write_atomically(path, save)


def file_bytes(path: str | Path) -> bytes:
    """A text file's bytes, gunzipped when it is gzip (known by its magic bytes, whatever its name); an unreadable
    or damaged file is an InputError."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputError(path, None, f"cannot be read ({error.strerror})", "Check the path.") from None
    if not raw.startswith(b"\x1f\x8b"):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(path, None, f"is a damaged gzip file ({error})", "Compress it again, or give it "
                         "uncompressed.") from None
