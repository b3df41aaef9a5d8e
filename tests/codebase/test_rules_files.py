"""The workflow's rules files stay short and split at their seams (as in snakemake-workflows/rna-seq-star-deseq2): a
file is one stage, one page family or one method type, read whole in a sitting."""

from __future__ import annotations

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
