"""ir_metadata (PRIMAD, schema 0.1) for an exported TREC run, written as the YAML file beside it.

Not as `#` lines in the run: trec_eval skips them, but pytrec_eval's parse_run, ir_measures' read_trec_run and
ranx's Run.from_file all fail on them (tests/io/test_ecosystem.py). The sidecar is the YAML document that
ir_metadata's tooling reads as a template (repro_eval's MetadataHandler(run, metadata_path=...)), so a user can
annotate the run with it in one call where a campaign wants the header in the file.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

import rankbench
from rankbench.io.files import write_text
from rankbench.records.provenance import source_commit

SCHEMA_VERSION = "0.1"
# The libraries whose versions decide a run's numbers, those installed listed (rankbench's own first).
LIBRARIES = ("numpy", "pandas", "pyarrow", "scipy", "bm25s", "faiss-cpu", "lancedb", "sentence-transformers", "torch",
             "snakemake")


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def run_metadata(tag: str, method: Mapping[str, Any], dataset: str, qset: Mapping[str, Any],
                 corpus_sha256: str, provenance: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The PRIMAD record of one exported run: platform (OS, Python, library versions), implementation (rankbench
    version and commit), method (its effective config, and the provenance its run file holds: a search endpoint's
    address, server version and when it was asked), data (corpus and question-set hashes). Research goal and actor
    are the user's to fill in."""
    libraries = [f"rankbench=={rankbench.__version__}"] + [
        f"{name}=={version}" for name in LIBRARIES if (version := _installed(name))]
    return {
        "schema-version": SCHEMA_VERSION,
        "run-version": "1.0",
        "tag": tag,
        "platform": {
            "hardware": {"architecture": platform.machine()},
            "operating system": {"kernel": f"{platform.system()} {platform.release()}"},
            "software": {"python": platform.python_version(), "libraries": libraries},
        },
        "implementation": {
            "source": {"lang": "python", "repository": "rankbench", "version": rankbench.__version__,
                       "commit": source_commit()},
        },
        "method": {"automatic": True, "config": dict(sorted(method.items())),
                   **({"provenance": dict(provenance)} if provenance else {})},
        "data": {
            "test collection": {
                "name": dataset,
                "corpus sha256": corpus_sha256,
                "question set": {"version": qset.get("version"), "sha256": qset.get("sha256")},
            },
        },
    }


def write_run_metadata(record: Mapping[str, Any], path: str | Path) -> None:
    """The record as YAML (keys in PRIMAD order), written atomically."""
    write_text(yaml.safe_dump(dict(record), sort_keys=False, allow_unicode=True), path)
