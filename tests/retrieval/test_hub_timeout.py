"""A hub that accepts connections and never answers fails the start within a few HF_HUB_ETAG_TIMEOUTs, not never
(huggingface_hub sends its metadata requests without a timeout)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from http_servers import silent

__all__ = ["silent"]  # fixture
REPO = Path(__file__).resolve().parents[2]
DOWNLOAD = """
from rankbench.errors import InputError
from rankbench.retrieval.encoders.hub import download_snapshot
try:
    download_snapshot("org/never-cached")
except InputError as error:
    print(error)
"""


def test_a_hub_that_never_answers_fails_the_download_in_seconds(silent: str, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(HF_ENDPOINT=silent, HF_HUB_ETAG_TIMEOUT="1", HF_HUB_CACHE=str(tmp_path / "hub"),
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", DOWNLOAD], env=env, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert "hub model 'org/never-cached' could not be downloaded" in result.stdout, result.stderr[-2000:]
    assert "Timeout" in result.stdout and "hf download org/never-cached" in result.stdout
    assert elapsed < 20, elapsed  # before: no answer, no end (the request had no timeout)
