"""The workflow's rules files stay short and split at their seams (as in snakemake-workflows/rna-seq-star-deseq2): a
file is one stage, one page family or one method type, read whole in a sitting."""

from __future__ import annotations

import re
from pathlib import Path

WORKFLOW = Path(__file__).resolve().parents[2] / "workflow"


def test_every_rules_file_is_under_200_lines() -> None:
    files = [WORKFLOW / "Snakefile", *sorted((WORKFLOW / "rules").rglob("*.smk"))]
    lines = {str(p.relative_to(WORKFLOW)): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    long = {name: n for name, n in lines.items() if n >= 200}
    assert len(files) > 20
    assert not long, f"rules files of 200 lines or more (split them at a seam): {long}"


def test_every_rules_file_is_included() -> None:
    """A file split off and never included would silently drop its rules: each is named by the Snakefile, by
    common.smk or by the method types' glob."""
    snakefile = (WORKFLOW / "Snakefile").read_text(encoding="utf-8")
    common = (WORKFLOW / "rules" / "common.smk").read_text(encoding="utf-8")
    study = (WORKFLOW / "rules" / "study_common.smk").read_text(encoding="utf-8")
    for path in sorted((WORKFLOW / "rules").glob("*.smk")):
        name = path.name
        assert f'"rules/{name}"' in snakefile or f'"{name}"' in common or name in study, f"{name} is never included"


def test_a_script_hands_over_exactly_when_its_rule_declares_a_worker() -> None:
    """Which worker serves a script is its rule's declaration, `script: in_worker(...)` (execution/local_run.py);
    its first line, `hand_over(snakemake, __file__)`, only takes the job there from its own process. A script that
    hands over with no rule declaring it would quietly lose the worker (every job a Python start more), and a
    declared script that does not hand over would run in its own process whenever Snakemake's does not hand it."""
    rules = "".join(path.read_text(encoding="utf-8") for path in (WORKFLOW / "rules").rglob("*.smk"))
    declared = set(re.findall(r'in_worker\("(?:\.\./)+scripts/([\w.]+)"', rules))
    handing = {path.name for path in (WORKFLOW / "scripts").glob("*.py")
               if "\nhand_over(snakemake, __file__)" in path.read_text(encoding="utf-8")}
    assert len(handing) > 20
    assert handing - declared == set(), "scripts that hand over but no rule declares (script: in_worker(...))"
    assert declared - handing == set(), "scripts declared in_worker that do not hand_over(snakemake, __file__)"
