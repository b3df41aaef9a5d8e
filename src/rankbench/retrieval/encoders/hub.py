"""Hugging Face hub models by id (`org/name`, optional revision): resolved from the local hub cache to a snapshot
folder and its commit, without network; downloaded into that cache only when asked and hub access is on.

The cache is the one huggingface_hub and sentence-transformers use (HF_HUB_CACHE, else HF_HOME/hub), read from the
environment at each call: huggingface_hub reads it once, when first imported."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankbench.errors import InputError

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
# A revision: a commit, a branch or tag name (components of letters, digits and _ . + -, none starting with `.`,
# `+` or `-`, no `..`), or a pull request's `refs/pr/N`. huggingface_hub reads a name as a file under the cache's
# refs/ folder, so nothing else may pass (`refs/pr/../../x` would read a file outside the cache as the commit).
# The config schema's `revision` pattern is this one (tests/configuration/test_config_checks.py keeps them equal).
REVISION = re.compile(r"^(?:refs/pr/[0-9]+|(?!refs/)(?!.*\.\.)"
                      r"[A-Za-z0-9_][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+-]*)*)$")
MAX_REVISION_LENGTH = 200
# Other formats a repository may hold beside the PyTorch weights; the loaders here never read them.
NOT_LOADED = ["onnx/*", "openvino/*", "*.onnx", "*.h5", "*.msgpack", "*.ot", "tf_model*", "flax_model*",
              "rust_model*", "coreml/*", "*.tflite", "*.gguf"]
_ON = {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class Snapshot:
    """A cached revision of a hub repository: its commit and the folder the loaders read."""

    repo_id: str
    commit: str
    folder: Path


def is_hub_id(model: str) -> bool:
    """Whether a model name is a hub id (`org/name`) rather than an existing folder."""
    return bool(HUB_ID.match(model)) and not Path(model).exists()


def check_revision(repo_id: str, revision: str | None) -> None:
    """A revision that is not a commit, branch, tag or refs/pr/N (see REVISION) is refused before the cache is read."""
    if revision is not None and (len(revision) > MAX_REVISION_LENGTH or not REVISION.match(revision)):
        raise InputError(None, None, f"hub model {repo_id!r} has revision {revision!r}, which is not a commit, a "
                         "branch or tag name, or refs/pr/N",
                         "Pin a commit hash (or a branch or tag name without '..').")


def hub_cache() -> Path:
    """The hub cache folder as the environment says now (HF_HUB_CACHE, else HF_HOME/hub, else the default)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache") / "huggingface"
    return Path(home).expanduser() / "hub"


def hub_access() -> bool:
    """Whether hub downloads are allowed (HF_HUB_OFFLINE not set)."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() not in _ON


def download_command(repo_id: str, revision: str | None) -> str:
    """The command that puts a revision into the hub cache on a machine with hub access."""
    return f"hf download {repo_id}" + (f" --revision {revision}" if revision else "")


def _fix(repo_id: str, revision: str | None) -> str:
    return (f"On a machine with hub access run `{download_command(repo_id, revision)}` (older huggingface_hub: "
            f"`huggingface-cli download …`) into this cache ({hub_cache()}: HF_HUB_CACHE, else HF_HOME/hub), or give "
            "the folder of a downloaded copy as `model`.")


def cached_revisions(repo_id: str) -> dict[str, list[str]]:
    """Commit -> the refs (branches, tags) pointing at it, for every snapshot of the repository in the cache."""
    repo = hub_cache() / f"models--{repo_id.replace('/', '--')}"
    snapshots = repo / "snapshots"
    commits: dict[str, list[str]] = {path.name: [] for path in sorted(snapshots.iterdir())} \
        if snapshots.is_dir() else {}
    refs = repo / "refs"
    for ref in sorted(refs.rglob("*")) if refs.is_dir() else []:
        if ref.is_file():
            commits.setdefault(ref.read_text(encoding="utf-8").strip(), []).append(str(ref.relative_to(refs)))
    return commits


def cached_snapshot(repo_id: str, revision: str | None = None) -> Snapshot:
    """The cached snapshot of repo_id at revision (a commit, branch or tag; main when None), never over the network.

    A missing revision is an InputError that says what the cache holds and how to fill it."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import IncompleteSnapshotError, LocalEntryNotFoundError

    check_revision(repo_id, revision)
    wanted = f"revision {revision!r}" if revision else "its default revision (main)"
    fix = _fix(repo_id, revision)
    try:
        folder = Path(snapshot_download(repo_id, revision=revision, cache_dir=hub_cache(), local_files_only=True,
                                        ignore_patterns=NOT_LOADED))
    except IncompleteSnapshotError as error:
        missing = re.search(r"\d+ file\(s\) (are|is) missing \([^)]*\)", str(error))
        raise InputError(None, None, f"hub model {repo_id!r} at {wanted} is cached incompletely in {hub_cache()}"
                         + (f" ({missing.group(0)})" if missing else ""), fix) from None
    except LocalEntryNotFoundError:
        cached = cached_revisions(repo_id)
        if not cached:
            raise InputError(None, None, f"hub model {repo_id!r} is not in the Hugging Face cache {hub_cache()}",
                             fix) from None
        held = "; ".join(commit + (f" ({', '.join(refs)})" if refs else "") for commit, refs in cached.items())
        raise InputError(None, None, f"hub model {repo_id!r} is pinned to {wanted}, but the Hugging Face cache "
                         f"{hub_cache()} holds only {held}",
                         f"{fix[:-1]}; or pin a cached revision (`revision: {next(iter(cached))}`).") from None
    if not weight_files(folder):
        raise InputError(None, None, f"hub model {repo_id!r} at {wanted} is cached incompletely in {hub_cache()} "
                         "(its snapshot has no weight file)", fix)
    return Snapshot(repo_id, folder.name, folder)


def download_snapshot(repo_id: str, revision: str | None = None) -> Snapshot:
    """Download repo_id at revision into the hub cache (the files the PyTorch loaders read), then the snapshot.

    Raises InputError at once when hub access is off, and when the hub cannot be reached or does not answer (after
    HF_HUB_ETAG_TIMEOUT seconds, by default 10, per connection attempt and read)."""
    from huggingface_hub import snapshot_download

    check_revision(repo_id, revision)
    if not hub_access():
        raise InputError(None, None, f"hub model {repo_id!r} is not in the Hugging Face cache {hub_cache()} and "
                         "HF_HUB_OFFLINE forbids downloading it", _fix(repo_id, revision))
    _bound_hub_requests()
    try:
        snapshot_download(repo_id, revision=revision, cache_dir=hub_cache(), ignore_patterns=NOT_LOADED)
    except Exception as error:  # noqa: BLE001 - network, authentication, unknown repo or revision: all say the same
        root: BaseException = error
        while root.__cause__ is not None:  # huggingface_hub wraps the network error it met
            root = root.__cause__
        reason = (str(root).strip().splitlines() or [""])[0]
        raise InputError(None, None, f"hub model {repo_id!r} could not be downloaded into the Hugging Face cache "
                         f"{hub_cache()} ({type(root).__name__}{': ' + reason if reason else ''})",
                         _fix(repo_id, revision)) from None
    return cached_snapshot(repo_id, revision)


def _bound_hub_requests() -> None:
    """Give each hub request sent without a timeout HF_HUB_ETAG_TIMEOUT seconds per connect and read: huggingface_hub
    sends its metadata requests (repo info, file list) with none, so a hub that accepts a connection and never
    answers kept the run waiting at start for ever."""
    from huggingface_hub import get_session

    hooks = get_session().event_hooks["request"]  # the shared client's own list: appending changes the client
    if _with_timeouts not in hooks:
        hooks.append(_with_timeouts)


def _with_timeouts(request: Any) -> None:
    """An httpx request hook: its unset timeouts set to HF_HUB_ETAG_TIMEOUT (downloads keep their own)."""
    from huggingface_hub import constants

    timeouts = request.extensions.get("timeout") or {}
    request.extensions["timeout"] = {phase: constants.HF_HUB_ETAG_TIMEOUT if seconds is None else seconds
                                     for phase, seconds in {"connect": None, "read": None, "write": None,
                                                            "pool": None, **timeouts}.items()}


def weight_files(folder: Path) -> list[Path]:
    """The weight files a PyTorch loader reads in a model folder (safetensors, pytorch_model*.bin), sorted."""
    found = [path for pattern in ("*.safetensors", "pytorch_model*.bin") for path in Path(folder).rglob(pattern)]
    skipped = {pattern.split("/")[0] for pattern in NOT_LOADED if pattern.endswith("/*")}
    return sorted(path for path in found if not skipped & set(path.relative_to(folder).parts))


def file_sha256(path: str | Path) -> str:
    """sha256 of a file, read in 1 MiB blocks (the one helper: model weights, Anserini's jar, the packaged GGUF)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(folder: Path) -> str:
    """sha256 of a model's weights: of its one weight file, or of the `sha256sum` lines of several (sorted by path),
    so `sha256sum model.safetensors` (or `sha256sum <files> | sha256sum`) checks it; '' for a folder without any."""
    files = weight_files(folder)
    if len(files) == 1:
        return file_sha256(files[0])
    lines = "".join(f"{file_sha256(path)}  {path.relative_to(folder).as_posix()}\n" for path in files)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest() if files else ""
