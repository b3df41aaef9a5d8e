"""The user's loop on a copy of the demo: run, change one method's parameter, run again; `rankbench runs`,
`diff-runs` and the comparison page's "Since the last run" agree on what changed, and the explorer can filter to it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from workflow_helpers import edit_config, snakemake

from rankbench.cli import main

pytestmark = pytest.mark.slow
KEY = "methods.bm25-rm3.prf.original_weight"  # a query-time setting of one method nothing else consumes


def _small(config: dict) -> None:
    """Two methods of one version: the cheapest config whose second run changes one method and not the other."""
    config["methods"] = {name: config["methods"][name] for name in ("bm25", "bm25-rm3")}
    config["qsets"] = {"v1": config["qsets"]["v1"]}
    config["diffs"] = []


def _rm3_weight(config: dict) -> None:
    _small(config)
    config["methods"]["bm25-rm3"]["prf"]["original_weight"] = 0.2


@pytest.fixture(scope="module")
def changed(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo run with two methods, then again with bm25-rm3's original_weight 0.5 -> 0.2."""
    workdir = Path(shutil.copytree(demo, tmp_path_factory.mktemp("runs") / "demo", symlinks=True))
    for edit, name in ((_small, "config-small.yaml"), (_rm3_weight, "config-rm3.yaml")):
        result = snakemake(workdir, "--cores", "2", configfile=edit_config(workdir, edit, name))
        assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def _cli(capsys, *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_runs_lists_both_runs_with_the_changed_key(changed: Path, capsys) -> None:
    listing = _cli(capsys, "runs", "--results", str(changed / "results"), "--qset", "v1")
    rows = [line for line in listing.splitlines() if re.match(r"^\| \d{8}T\d{6}Z-\d{4} \|", line)]
    assert len(rows) >= 2
    assert f"`{KEY}` 0.5 → 0.2" in rows[-1] and KEY not in rows[-2]


def test_diff_runs_names_the_changed_method_questions_and_agrees_with_the_page(changed: Path, capsys) -> None:
    text = _cli(capsys, "diff-runs", "--results", str(changed / "results"), "--qset", "v1")
    assert f"`{KEY}` 0.5 → 0.2" in text
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines()
            if re.match(r"^\| [\w+\[\]=-]+ \| (same|changed) \|", line)}
    assert "| changed |" in rows["bm25-rm3"]
    unchanged = [m for m in rows if m != "bm25-rm3"]
    zero = r"\+0\.000 \(1\.000\)"
    assert unchanged == ["bm25"]
    assert re.match(rf"^\| bm25 \| same \| 43 \| {zero} \| {zero} \| {zero} \| {zero} \| 0/43/0 \|$", rows["bm25"])
    assert "**bm25-rm3**, nDCG@10 by question:" in text
    assert [m for m in re.findall(r"^\*\*(.+?)\*\*, nDCG@10 by question:", text, re.M)] == ["bm25-rm3"]
    assert re.search(r"^- (worse|better):\n  - `\S+` .+ — \d\.\d{3} → \d\.\d{3}$", text, re.M)
    page = (changed / "results/demo/v1/comparison.md").read_text()
    section = "## Since the last run\n" + page.split("\n## Since the last run\n")[1]

    def body(markdown: str) -> list[str]:
        """All but the heading, with the later run's id left out (the page is written before it is stored)."""
        lines = markdown.splitlines()
        earlier, _, config = lines[2].partition(" → run ")
        return [earlier, config.split(". Config: ")[1], *lines[3:]]

    assert body(section) == body(text)


def test_the_explorer_marks_the_questions_that_moved(changed: Path) -> None:
    html = (changed / "results/demo/v1/explorer.html").read_text()
    payload = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)[1])
    moved = {m["name"]: m["moved"] for m in payload["methods"]}
    assert any(moved["bm25-rm3"]) and not any(any(bits) for name, bits in moved.items() if name != "bm25-rm3")
    assert 'id="f-moved"' in html


def test_history_page_charts_the_runs(changed: Path) -> None:
    page = (changed / "results/demo/history.html").read_text()
    assert '<option value="v1/ndcg@10">' in page and KEY in page and "https://" not in page
