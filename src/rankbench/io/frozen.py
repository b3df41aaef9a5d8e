"""Frozen question-set versions: each registered with the sha256 of its content in a lock file."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from rankbench.errors import InputError
from rankbench.io.files import write_text
from rankbench.io.loaders import read_jsonl

# A version name (and lock key): letters, digits, `_`, `-` and single dots between them (`v1.rewrites.llm`);
# never a path (`..`, `/`) nor blanks, since it names a folder under results/.
VERSION_NAME = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_LOCK_FIX = "Restore it from version control, or register versions with `rankbench freeze`."


def _read_bytes(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise InputError(path, None, f"cannot be read ({error.strerror})", "Check the path.") from None


def content_hash(paths: Sequence[Path]) -> str:
    """sha256 over the bytes of the files, in order (one file for native sets; queries + qrels for BEIR)."""
    if len(paths) == 1:
        return hashlib.sha256(_read_bytes(paths[0])).hexdigest()
    digest = hashlib.sha256()
    for path in paths:
        digest.update(hashlib.sha256(_read_bytes(path)).digest())
    return digest.hexdigest()


def read_lock(lock_path: Path) -> dict[str, str]:
    """Version name → registered sha256 (lower case: a hash written in capitals is the same hash), from a JSON
    lock file."""
    try:
        lock = json.loads(Path(lock_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(lock_path, None, f"cannot be read as a JSON lock file ({error})", _LOCK_FIX) from None
    if not isinstance(lock, dict) or not all(isinstance(v, str) for v in lock.values()):
        raise InputError(lock_path, None, "must map version names to sha256 strings", _LOCK_FIX)
    for version, digest in lock.items():
        if not _SHA256.fullmatch(digest):
            raise InputError(lock_path, f"version {version!r}", f"has {digest!r}, which is not a sha256 "
                             "(64 hexadecimal digits)", _LOCK_FIX)
    return {version: digest.lower() for version, digest in lock.items()}


def check_frozen(version: str, paths: Sequence[Path], expected: str | None, lock_path: Path | str) -> str:
    """The content hash of a version, after checking it against its registered hash (in either case)."""
    actual = content_hash(paths)
    if expected is None:
        raise InputError(paths[0], f"version {version!r}", f"is not registered in {lock_path}",
                         f"Freeze it first: `rankbench freeze {paths[0]} --version {version} --lock {lock_path}`.")
    if actual != expected.lower():
        raise InputError(paths[0], f"version {version!r}",
                         f"changed after it was frozen (sha256 {actual[:12]}…, registered {expected[:12]}…)",
                         "A frozen version never changes: restore the file (e.g. `git checkout` it) and put your "
                         "edits in a new version file registered with `rankbench freeze`.")
    return actual


def frozen_digest(key: str, path: Path, expected: str | None, lock_path: Path | str | None) -> str:
    """A frozen file's content hash: checked against its lock entry when the dataset has a lock (native), else
    the hash alone (a BEIR or TREC dataset has no lock; its results still remember the hash)."""
    return check_frozen(key, [path], expected, lock_path) if lock_path else content_hash([path])


def rewrite_lock_key(version: str, rewrite: str) -> str:
    """The lock key under which a version's rewrites file is frozen (e.g. `v1.rewrites.llm`)."""
    return f"{version}.rewrites.{rewrite}"


def results_record(version_folder: Path | str, rewrite: str | None = None) -> Path:
    """Where the content hash that a version's results (or its rewrites' results) were made from is recorded."""
    name = ".frozen-sha256" if rewrite is None else f"rewrites/.{rewrite}.frozen-sha256"
    return Path(version_folder) / name


def check_version_name(version: str, where: str | Path | None = None) -> None:
    """A version name becomes a folder under results/ and a lock key: it must match VERSION_NAME."""
    if not VERSION_NAME.fullmatch(version):
        raise InputError(where, f"version {version!r}", "is not a usable version name",
                         "Use letters, digits, `_`, `-` and single dots between them (e.g. v2, 2025-06, v1.fixed).")


def freeze(path: Path, version: str, lock_path: Path) -> str:
    """Register a new version's hash in the lock file; refuses to re-register a version with other content,
    a file that is not JSONL, a version name that is not one, and a lock whose folder does not exist."""
    path, lock_path = Path(path), Path(lock_path)
    check_version_name(version, "--version")
    if not path.is_file():
        raise InputError(path, None, "is not a file", "Give the path of the version's JSONL file.")
    if not sum(1 for _ in read_jsonl(path)):  # every line parsed: a JSON first line does not make a JSONL file
        raise InputError(path, None, "holds no JSON line", "A version file holds one JSON object a line.")
    if not lock_path.parent.is_dir():
        raise InputError(lock_path, None, f"cannot be written: folder {str(lock_path.parent)!r} does not exist",
                         "Create the folder, or give --lock a path in an existing folder.")
    lock = read_lock(lock_path) if lock_path.exists() else {}
    digest = content_hash([path])
    if version in lock and lock[version] != digest:
        raise InputError(lock_path, f"version {version!r}", "is already frozen with different content",
                         "Pick a new version name; frozen versions are never changed.")
    lock[version] = digest
    write_text(json.dumps(dict(sorted(lock.items())), indent=2) + "\n", lock_path)
    return digest


def check_results_record(version: str, digest: str, record: Path) -> None:
    """Refuse content other than the one a version's results were first made from (see guard_results)."""
    record = Path(record)
    if not record.exists():
        return
    made_from = record.read_text(encoding="utf-8").strip().lower()
    if made_from != digest:
        raise InputError(record, f"version {version!r}",
                         f"results were made from content sha256 {made_from[:12]}…, but the version's files "
                         f"now hash to {digest[:12]}…",
                         "Frozen versions never change: restore the original file, or register your edit as a "
                         f"new version; to start {version!r} over on purpose, delete {record.parent}.")


def guard_results(version: str, digest: str, record: Path) -> None:
    """Refuse to recompute a version's results from other content than they were first made from.

    The record sits beside the version's results and is not a workflow output, so Snakemake never deletes
    it: even an edited lock file cannot silently change what `v1` means in results/.
    """
    check_results_record(version, digest, record)
    if not Path(record).exists():
        write_text(digest + "\n", record)
