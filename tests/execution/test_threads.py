"""Tests of rankbench.execution.threads: a job's thread pools follow the threads Snakemake gave it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rankbench.execution.threads import THREAD_VARIABLES, limit_threads, usable_cpus

pytest.importorskip("torch")

# In a fresh process: torch and numpy loaded first (their pools already started), then the limit.
SCRIPT = """
import json, os, sys
import numpy, torch, pyarrow
from threadpoolctl import threadpool_info
torch.ones(64, 64) @ torch.ones(64, 64)
from rankbench.execution.threads import THREAD_VARIABLES, limit_threads
n = limit_threads(int(sys.argv[1]))
print(json.dumps({"n": n, "torch": torch.get_num_threads(), "arrow": pyarrow.cpu_count(),
                  "blas": sorted({pool["num_threads"] for pool in threadpool_info()}),
                  "env": {v: os.environ[v] for v in THREAD_VARIABLES}, "wait": os.environ["OMP_WAIT_POLICY"]}))
"""


def pools(threads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES and k != "OMP_WAIT_POLICY"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(threads)], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def test_every_pool_follows_the_job_threads() -> None:
    """One thread given: torch, Arrow, the BLAS/OpenMP runtimes already loaded and the variables read by pools
    started later all hold one thread, and idle OpenMP threads sleep."""
    got = pools(1)
    assert got["n"] == got["torch"] == got["arrow"] == 1
    assert got["blas"] == [1]
    assert set(got["env"].values()) == {"1"}
    assert got["wait"] == "PASSIVE"


def test_threads_are_capped_at_the_usable_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (*THREAD_VARIABLES, "OMP_WAIT_POLICY"):
        monkeypatch.setenv(variable, "")
    assert limit_threads(10**6) == usable_cpus()
    assert os.environ["OMP_NUM_THREADS"] == str(usable_cpus())


LATER = """
import json, sys
import numpy
from rankbench.execution.threads import limit_threads
limit_threads(2)  # finds numpy's pools only
import faiss  # loads its own BLAS and OpenMP runtimes
from threadpoolctl import threadpool_info
limit_threads(1)
print(json.dumps(sorted({(pool["internal_api"], pool["num_threads"]) for pool in threadpool_info()})))
"""


def test_pools_of_libraries_loaded_after_a_first_limit_are_limited_too() -> None:
    """The job worker finds the loaded pools once for all its jobs; a library loaded later is still found."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES and k != "OMP_WAIT_POLICY"}
    done = subprocess.run([sys.executable, "-c", LATER], env=env, capture_output=True, text=True, check=True)
    pools = json.loads(done.stdout)
    assert {"openmp", "openblas"} <= {api for api, _ in pools}
    assert {threads for _, threads in pools} == {1}
