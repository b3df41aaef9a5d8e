"""Breakdowns and report.audience on a real (BM25-only) run of the six-question mini fixture: a draft version whose
questions carry tags and a difficulty gets tables per tag and per difficulty for every metric, byte-identical when
rebuilt (on the breakdowns page; the comparison page keeps the first headline metric per kind and links it), and
the report built for the public audience leaves the staff question out and says so at the top."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.workflow_helpers import copy_dataset, edit_config, snakemake

pytestmark = pytest.mark.slow
MINI = Path("tests/fixtures/mini")
PAGE = Path("results/mini/v2/breakdowns.md")
COMPARISON = Path("results/mini/v2/comparison.md")
EXTRA = {"q1": (["returns"], "easy"), "q2": (["codes", "support"], "hard"), "q3": (["support"], "easy"),
         "q4": (["support"], "medium"), "q6": ([], "hard")}


def with_breakdowns(config: dict, audience: str = "all") -> None:
    """Two BM25 methods (no model to load), the draft version v2 and the audience."""
    config["qsets"]["v2"] = {"path": str(MINI / "questions" / "v2.jsonl"), "draft": True}
    config["methods"] = {"bm25": {"type": "bm25"}, "bm25-flat": {"type": "bm25", "k1": 0.5, "b": 0.2}}
    config["evaluation"]["baseline"] = "bm25"
    # groups of one or two questions: tabled here only with min_group 1 (the default, 5, counts them in a line)
    config["report"] = {"ci": True, "audience": audience, "min_group": 1}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path_factory.mktemp("breakdowns"))
    lines = []
    for line in (workdir / MINI / "questions" / "v1.jsonl").read_text().splitlines():
        record = json.loads(line)
        tags, difficulty = EXTRA.get(record["qid"], ([], None))
        record.update({"tags": tags} if tags else {}, **({"difficulty": difficulty} if difficulty else {}))
        lines.append(json.dumps(record, ensure_ascii=False))
    (workdir / MINI / "questions" / "v2.jsonl").write_text("\n".join(lines) + "\n")
    edit_config(workdir, with_breakdowns, "all.yaml")
    edit_config(workdir, lambda config: with_breakdowns(config, "public"), "public.yaml")
    result = snakemake(workdir, "--cores", "2", str(PAGE), str(COMPARISON), configfile="all.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir


def without_date(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("- date: "))


def test_every_metric_per_kind_tag_and_difficulty_and_rebuilt_byte_identical(workdir: Path) -> None:
    page = (workdir / PAGE).read_text()
    breakdowns = page.split("## Breakdowns")[1].split("\n## ")[0]
    for metric in ("hit@1", "R@5", "nDCG@3", "P@5"):
        for heading in ("Per question kind", "Per tag", "Per difficulty"):
            assert f"### {heading}: {metric}" in breakdowns, (heading, metric)
    tag_table = breakdowns.split("### Per tag: nDCG@5")[1].split("###")[0]
    assert "| codes (n=1/1) | returns (n=1/1) | support (n=3/3) |" in tag_table  # q2 counts under both its tags
    assert "| easy (n=2/2) | medium (n=1/1) | hard (n=2/2) |" in breakdowns.split("### Per difficulty: nDCG@5")[1]
    assert "Audience" not in (workdir / COMPARISON).read_text().split("## ")[0]
    comparison = (workdir / COMPARISON).read_text()
    assert "### Per tag" not in comparison and "[breakdowns page](breakdowns.html)" in comparison
    assert "### Per question kind: hit@1" in comparison and "### Per question kind: nDCG@5" not in comparison
    assert snakemake(workdir, "--cores", "1", "--forcerun", "aggregate", str(PAGE),
                     configfile="all.yaml").returncode == 0
    assert without_date((workdir / PAGE).read_text()) == without_date(page)


def test_the_public_report_leaves_the_staff_question_out_and_says_so(workdir: Path) -> None:
    result = snakemake(workdir, "--cores", "2", str(PAGE), str(COMPARISON), configfile="public.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    page = (workdir / PAGE).read_text()
    assert (workdir / COMPARISON).read_text().split("## ")[0].count("**Audience: public**") == 1
    assert json.loads((workdir / "results/mini/v2/qset.json").read_text())["audience"] == "public"
    assert "medium" not in page.split("## Breakdowns")[1].split("\n## ")[0]  # q4, the staff question, is medium
