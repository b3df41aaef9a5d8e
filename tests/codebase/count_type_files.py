"""Count the files that name a method type or an encoder kind at a git revision: the files a new one of the same
shape touches (issue 24). Type `sparse` is a first-stage type with its own index (and its own encoder kind); kind
`static` an in-process dense encoder kind. Tests, CHANGELOG and the benchmarks are left out; docs are counted apart.

    python tests/codebase/count_type_files.py [REV ...]      # default: d053c18 (before issue 24) and HEAD
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What names each: its name quoted or as a YAML value, its rules, scripts and modules.
PATTERNS = {
    "method type sparse": r"""["']sparse["']|type: sparse|retrieve_sparse|sparse_index|sparse_queries|"""
                          r"""sparse_rewritten_queries|retrieval[./]sparse|encoders[./]sparse|SparseEncoderSpec|"""
                          r"""SPARSE_ENCODER_KIND""",
    "encoder kind static": r"""["']static["']|kind: static|static_encoder|encoders[./]static|StaticEncoder""",
}
# The files that are its own (its modules, scripts and rules) or its declaration (registry, kinds table, schema,
# packaging): the rest are shared code that knew about it.
OWN = {
    "method type sparse": ("src/rankbench/retrieval/sparse.py", "src/rankbench/retrieval/encoders/sparse.py",
                           "workflow/scripts/retrieve_sparse.py", "workflow/scripts/sparse_index.py",
                           "workflow/scripts/sparse_queries.py", "workflow/rules/index.smk",
                           "workflow/rules/queries.smk", "workflow/rules/retrieve.smk",
                           "workflow/rules/methods/sparse.smk", "workflow/rules/methods/sparse_common.smk",
                           "src/rankbench/retrieval/registry.py", "src/rankbench/retrieval/encoders/kinds.py",
                           "workflow/schemas/config.schema.yaml", "pyproject.toml", "environment.yml"),
    "encoder kind static": ("src/rankbench/retrieval/static_encoder.py", "src/rankbench/retrieval/encoders/static.py",
                            "src/rankbench/retrieval/encoders/kinds.py", "pyproject.toml", "environment.yml"),
}
LEFT_OUT = ("tests/", "benchmarks/", "CHANGELOG.md")
DOCS = (".md", ".rst")


def naming_files(revision: str, pattern: str) -> list[str]:
    """Files at revision whose text matches pattern (git grep, extended regex), minus the ones left out."""
    result = subprocess.run(["git", "grep", "-l", "-E", pattern, revision], cwd=REPO, capture_output=True,
                            text=True, check=False)
    files = [line.split(":", 1)[1] for line in result.stdout.splitlines()]
    return sorted(path for path in files if not path.startswith(LEFT_OUT))


def main(revisions: list[str]) -> None:
    for what, pattern in PATTERNS.items():
        for revision in revisions:
            files = naming_files(revision, pattern)
            code = [path for path in files if not path.endswith(DOCS)]
            own = {Path(path).name for path in OWN[what]}  # by name: files may move (e.g. the schema)
            shared = [path for path in code if Path(path).name not in own]
            print(f"{what} @ {revision}: {len(code)} code files (+ {len(files) - len(code)} docs), "
                  f"{len(shared)} of them shared code")
            for path in code:
                print(f"    {path}{'  (shared)' if path in shared else ''}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["d053c18", "HEAD"])
