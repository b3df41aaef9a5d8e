"""rankbench: reproducible retrieval evaluation (library side of the Snakemake workflow).

The public API (docs/reference/python-api.md): ``read_run``, ``read_qrels``, ``write_run``, ``write_qrels``,
``evaluate``, ``compare`` and ``fuse``. They are imported on first use, so ``import rankbench`` stays cheap (the
Snakefile imports rankbench's subpackages while it is parsed).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "read_run": "rankbench.io.trec", "read_qrels": "rankbench.io.trec", "write_run": "rankbench.io.trec",
    "write_qrels": "rankbench.io.trec", "evaluate": "rankbench.evaluation.experiment",
    "compare": "rankbench.evaluation.experiment", "Evaluation": "rankbench.evaluation.experiment",
    "Comparison": "rankbench.evaluation.experiment", "UnmatchedRunWarning": "rankbench.evaluation.experiment",
    "fuse": "rankbench.retrieval.fusion", "InputError": "rankbench.errors",
}
__all__ = ["Comparison", "Evaluation", "InputError", "UnmatchedRunWarning", "compare", "evaluate", "fuse",
           "read_qrels", "read_run", "write_qrels", "write_run"]

if TYPE_CHECKING:
    from rankbench.errors import InputError
    from rankbench.evaluation.experiment import Comparison, Evaluation, UnmatchedRunWarning, compare, evaluate
    from rankbench.io.trec import read_qrels, read_run, write_qrels, write_run
    from rankbench.retrieval.fusion import fuse


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rankbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
