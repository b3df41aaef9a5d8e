"""The recommended configuration on the real demo run (issue 53): a chunker and a k with their evidence, one rerank
decision for depths 20 and 30, the box at the top of the comparison page and of index.html, a fragment `rankbench
check` accepts once pasted into a copy of the demo's config, and `rankbench recommend`'s exit status."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_helpers import REPO

pytestmark = pytest.mark.slow
V3 = Path("results/demo/v3")
RANKBENCH = [sys.executable, "-m", "rankbench.cli"]


def _axis(box: str, axis: str) -> list[str]:
    return [line for line in box.splitlines() if line.startswith(f"- **{axis}")]


def test_demo_v3_recommends_a_chunker_and_a_k_with_their_evidence(demo: Path) -> None:
    box = (demo / V3 / "recommended.md").read_text()
    for axis in ("chunker", "k for the prompt"):
        (line,) = _axis(box, axis)
        assert "undecided" in line or ("Δ" in line and "Holm p" in line and "W/T/L" in line), line
        assert "prompt tokens" in line or "undecided" in line  # what it saves or costs
    (depth,) = _axis(box, "rerank depth")  # the grid's two points are one decision
    assert "depth 20" in depth and "depth 30" in depth


def test_the_box_opens_the_comparison_page_and_each_version_of_the_index(demo: Path) -> None:
    page = (demo / V3 / "comparison.md").read_text()
    box = (demo / V3 / "recommended.md").read_text().rstrip("\n")
    assert page.index("## Recommended configuration") < page.index("## The answer")
    assert box in page
    index = (demo / "results/demo/index.html").read_text()
    assert len(re.findall(r"<h3[^>]*>Recommended configuration</h3>", index)) == 3  # v1, v2, v3


def test_the_fragment_pasted_into_the_demo_config_passes_rankbench_check(demo: Path, tmp_path: Path) -> None:
    shutil.copytree(demo / "data", tmp_path / "data")
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    fragment = yaml.safe_load((demo / V3 / "recommended.yaml").read_text())
    assert set(fragment) == {"methods", "chunkers", "encoders"}
    config.update(fragment)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = subprocess.run([*RANKBENCH, "check"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_rankbench_recommend_prints_the_evidence_and_exits_on_the_undecided_axes(demo: Path) -> None:
    state = json.loads((demo / V3 / "recommended.json").read_text())
    result = subprocess.run([*RANKBENCH, "recommend", "--version", "v3"], cwd=demo, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == (3 if state["undecided"] else 0), result.stderr
    assert (demo / V3 / "recommended.yaml").read_text().strip() in result.stdout
    assert "W/T/L" in result.stdout
    missing = subprocess.run([*RANKBENCH, "recommend", "--version", "v9"], cwd=demo, capture_output=True, text=True,
                             timeout=120)
    assert missing.returncode == 2 and "v9" in missing.stderr and "Traceback" not in missing.stderr
