"""Every run records the versions of rankbench and of its main dependencies: what they are, and where they go (the
history record beside the models; the page's header)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import rankbench
from rankbench.analysis.history import run_records
from rankbench.pipeline import software
from rankbench.report.comparison import software_lines


def test_the_versions_are_the_installed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(software, "MAIN_PACKAGES", ("numpy", "pandas", "no-such-package-rankbench"))
    versions = software.software_versions()
    assert versions == {"rankbench": rankbench.__version__, "numpy": np.__version__, "pandas": pd.__version__}


def test_the_record_and_the_page_name_them() -> None:
    aggregate = pd.DataFrame({"method": ["bm25"], "grain": ["document"], "kind": ["all"], "metric": ["ndcg"],
                              "k": [10], "mean": [0.5]})
    versions = {"rankbench": "0.1.0", "numpy": "2.4.6"}
    record = run_records(aggregate, {"version": "v1", "sha256": "x"}, "d", "c", {}, [("ndcg", 10)], "document",
                         software=versions)[0]
    assert record["software"] == versions and record["metrics"] == {"ndcg@10": 0.5}
    assert software_lines(versions) == ["- software: rankbench 0.1.0, numpy 2.4.6"]
    assert software_lines({}) == []
