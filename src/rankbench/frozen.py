"""Frozen question-set versions: each registered with the sha256 of its content in a lock file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from rankbench.errors import InputError


def content_hash(paths: Sequence[Path]) -> str:
    """sha256 over the bytes of the files, in order (one file for native sets; queries + qrels for BEIR)."""
    if len(paths) == 1:
        return hashlib.sha256(Path(paths[0]).read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for path in paths:
        digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
    return digest.hexdigest()


def read_lock(lock_path: Path) -> dict[str, str]:
    """Version name → registered sha256, from a JSON lock file."""
    try:
        lock = json.loads(Path(lock_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(lock_path, None, f"cannot be read as a JSON lock file ({error})",
                         "Restore it from version control, or register versions with `rankbench freeze`.") from None
    if not isinstance(lock, dict) or not all(isinstance(v, str) for v in lock.values()):
        raise InputError(lock_path, None, "must map version names to sha256 strings",
                         "Restore it from version control, or register versions with `rankbench freeze`.")
    return lock


def check_frozen(version: str, paths: Sequence[Path], expected: str | None, lock_path: Path | str) -> str:
    """The content hash of a version, after checking it against its registered hash."""
    actual = content_hash(paths)
    if expected is None:
        raise InputError(paths[0], f"version {version!r}", f"is not registered in {lock_path}",
                         f"Freeze it first: `rankbench freeze {paths[0]} --version {version} --lock {lock_path}`.")
    if actual != expected:
        raise InputError(paths[0], f"version {version!r}",
                         f"changed after it was frozen (sha256 {actual[:12]}…, registered {expected[:12]}…)",
                         "A frozen version never changes: restore the file (e.g. `git checkout` it) and put your "
                         "edits in a new version file registered with `rankbench freeze`.")
    return actual


def freeze(path: Path, version: str, lock_path: Path) -> str:
    """Register a new version's hash in the lock file; refuses to re-register a version with other content."""
    lock = read_lock(lock_path) if Path(lock_path).exists() else {}
    digest = content_hash([path])
    if version in lock and lock[version] != digest:
        raise InputError(lock_path, f"version {version!r}", "is already frozen with different content",
                         "Pick a new version name; frozen versions are never changed.")
    lock[version] = digest
    tmp = Path(lock_path).with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(sorted(lock.items())), indent=2) + "\n", encoding="utf-8")
    tmp.replace(lock_path)
    return digest


def guard_results(version: str, digest: str, record: Path) -> None:
    """Refuse to recompute a version's results from other content than they were first made from.

    The record sits beside the version's results and is not a workflow output, so Snakemake never deletes
    it: even an edited lock file cannot silently change what `v1` means in results/.
    """
    record = Path(record)
    if record.exists():
        made_from = record.read_text(encoding="utf-8").strip()
        if made_from != digest:
            raise InputError(record, f"version {version!r}",
                             f"results were made from content sha256 {made_from[:12]}…, but the version's files "
                             f"now hash to {digest[:12]}…",
                             "Frozen versions never change: restore the original file, or register your edit as a "
                             f"new version; to start {version!r} over on purpose, delete {record.parent}.")
        return
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(digest + "\n", encoding="utf-8")
