"""Draft versions: editable until frozen; a version in the lock is frozen whatever its `draft` key says."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankbench.errors import InputError
from rankbench.io.frozen import freeze
from rankbench.project.drafts import drop_draft_line, is_draft
from rankbench.project.start_checks import check_frozen_files


def project(tmp_path: Path, draft: bool) -> dict:
    version = tmp_path / "v1.jsonl"
    version.write_text('{"qid": "q1", "question": "x", "labels": []}\n', encoding="utf-8")
    lock = tmp_path / "frozen.lock"
    lock.write_text("{}\n", encoding="utf-8")
    return {"dataset": {"format": "native", "corpus": str(tmp_path / "corpus.jsonl"), "lock": str(lock)},
            "qsets": {"v1": {"path": str(version), **({"draft": True} if draft else {})}}}


def edit(config: dict) -> None:
    path = Path(config["qsets"]["v1"]["path"])
    path.write_text(path.read_text() + '{"qid": "q2", "question": "y", "labels": []}\n', encoding="utf-8")


def test_a_draft_may_change_and_a_frozen_version_may_not(tmp_path: Path) -> None:
    config = project(tmp_path, draft=True)
    results = str(tmp_path / "results")
    assert is_draft(config, "v1", {})
    check_frozen_files(config, results)
    edit(config)
    check_frozen_files(config, results)  # an edited draft passes: it is not frozen
    freeze(Path(config["qsets"]["v1"]["path"]), "v1", Path(config["dataset"]["lock"]))
    assert not is_draft(config, "v1", {"v1": "0" * 64})
    check_frozen_files(config, results)
    edit(config)  # `draft: true` is still in the config, but the lock registers v1: it is frozen
    with pytest.raises(InputError, match="changed after it was frozen"):
        check_frozen_files(config, results)


def test_without_draft_an_unregistered_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not registered in"):
        check_frozen_files(project(tmp_path, draft=False), str(tmp_path / "results"))


def test_freezing_drops_only_the_draft_line(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    text = "qsets:\n  v0:\n    draft: true\n    path: a.jsonl\n  v1:\n    draft: true  # mine\n    path: b.jsonl\n"
    config.write_text(text, encoding="utf-8")
    assert drop_draft_line(config, "v1")
    assert config.read_text() == "qsets:\n  v0:\n    draft: true\n    path: a.jsonl\n  v1:\n    path: b.jsonl\n"
    assert not drop_draft_line(config, "v1")
    config.write_text("qsets:\n  v1: {draft: true, path: b.jsonl}\n", encoding="utf-8")
    assert not drop_draft_line(config, "v1")  # flow style: the user removes it (the lock decides anyway)
