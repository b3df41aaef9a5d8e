"""Documents for `rankbench init`: Markdown, HTML, text and PDF files become native records whose headings are the
sections corpus/sections.py splits; collections load through the project's loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from document_helpers import BATTERY_HTML, REFUNDS_MD, minimal_pdf, write_documents

from rankbench.corpus.documents import (
    folder_documents,
    html_document,
    load_documents_from,
    markdown_document,
    native_records,
    pdf_document,
    text_document,
)
from rankbench.corpus.sections import split_sections, text_lines
from rankbench.errors import InputError


def section_ids(text: str) -> list[str]:
    return [section.section_id for section in split_sections(text)]


def test_markdown_headings_are_sections_and_code_lines_are_not() -> None:
    title, text = markdown_document(REFUNDS_MD)
    assert title == "Refund policy"
    # the setext heading is a section; `# a comment` inside the fence is body text
    assert section_ids(text) == ["refund-policy", "delays", "warranty-claims"]
    assert "# a comment in code, not a heading" in text


def test_html_headings_are_sections_and_script_style_are_dropped() -> None:
    title, text = html_document(BATTERY_HTML)
    assert title == "Battery guide"
    assert section_ids(text) == ["battery-guide", "charging", "storage"]
    charging = next(s for s in split_sections(text) if s.section_id == "charging")
    assert charging.body == "Use the original charger. Never overnight."
    assert "store it cool" in text and "&amp;" not in text and "& store" in text
    assert "hidden" not in text and "color" not in text


def test_plain_text_is_one_section_and_hash_lines_stay_body() -> None:
    title, text = text_document("# not a heading\nplain words\n")
    assert title == ""
    assert section_ids(text) == ["_intro"]
    assert "not a heading" in split_sections(text)[0].body


def test_pdf_pages_are_sections(tmp_path: Path) -> None:
    path = tmp_path / "w.pdf"
    path.write_bytes(minimal_pdf(["First page (text).", "Second page."], title="Warranty terms"))
    title, text = pdf_document(path)
    assert title == "Warranty terms"
    sections = split_sections(text)
    assert [s.section_id for s in sections] == ["page-1", "page-2"]
    assert sections[0].body == "First page (text)." and sections[1].body == "Second page."


def test_a_broken_pdf_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.4\nnot really a pdf\n")
    with pytest.raises(InputError, match=r"broken\.pdf.*(cannot be read as a PDF|holds no text)"):
        pdf_document(path)


def test_an_encrypted_pdf_is_one_plain_message(tmp_path: Path) -> None:
    """Before: the message was nested in a reader failure ("cannot be read as a PDF (…: is an encrypted PDF. …)")."""
    from pypdf import PdfReader, PdfWriter

    plain = tmp_path / "plain.pdf"
    plain.write_bytes(minimal_pdf(["Secret page."]))
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt("owner-and-user", algorithm="RC4-128")
    path = tmp_path / "locked.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    with pytest.raises(InputError) as error:
        pdf_document(path)
    assert str(error.value) == f"{path}: is an encrypted PDF. Save an unencrypted copy of it."


def test_a_folder_gives_ids_from_relative_paths(tmp_path: Path) -> None:
    folder = write_documents(tmp_path / "docs")
    (folder / "logo.png").write_bytes(b"\x89PNG")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD.md").write_text("# hidden\n", encoding="utf-8")
    documents, notes = folder_documents(folder)
    assert list(documents["doc_id"]) == ["guide.html", "policies/refunds.md", "shipping_notes.txt", "warranty.pdf"]
    assert list(documents["title"]) == ["Battery guide", "Refund policy", "shipping notes", "Warranty"]
    assert notes.other_type == [folder / "logo.png"] and notes.hidden == [folder / ".git"]
    records = native_records(documents)
    assert records[2] == {"doc_id": "shipping_notes.txt", "title": "shipping notes", "audience": "public",
                          "text": "Shipping takes three days.\nWe ship to France and Belgium.\n",
                          "source": "shipping notes.txt"}


@pytest.mark.parametrize("case, expected", [
    ("empty folder", "holds no Markdown, HTML, text or PDF file"),
    ("same id", "has the document id 'a_b.md' of"),
    ("not utf-8", r"bad\.txt, line 2: is not valid UTF-8"),
    ("empty file", r"blank\.md: holds no text"),
    ("missing", "does not exist"),
])
def test_bad_folders_are_refused_naming_the_file(tmp_path: Path, case: str, expected: str) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    if case == "same id":
        (folder / "a b.md").write_text("# A\n\nx\n", encoding="utf-8")
        (folder / "a_b.md").write_text("# B\n\ny\n", encoding="utf-8")
    elif case == "not utf-8":
        (folder / "bad.txt").write_bytes(b"fine\nnot \xff utf-8\n")
    elif case == "empty file":
        (folder / "blank.md").write_text("\n\n", encoding="utf-8")
    elif case == "missing":
        folder = tmp_path / "nowhere"
    with pytest.raises(InputError, match=expected):
        load_documents_from(folder)


def test_collections_load_through_the_project_loaders(tmp_path: Path) -> None:
    native = tmp_path / "corpus.jsonl"
    native.write_text(json.dumps({"doc_id": "d1", "text": "## A\n\nx", "audience": "staff", "owner": "ops"}) + "\n",
                      encoding="utf-8")
    documents, _ = load_documents_from(native)
    assert native_records(documents) == [{"doc_id": "d1", "title": "", "text": "## A\n\nx", "audience": "staff",
                                          "owner": "ops"}]
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "corpus.jsonl").write_text(json.dumps({"_id": "b1", "title": "T", "text": "body"}) + "\n",
                                       encoding="utf-8")
    assert list(load_documents_from(beir)[0]["doc_id"]) == ["b1"]
    assert list(load_documents_from(beir / "corpus.jsonl")[0]["doc_id"]) == ["b1"]
    trec = tmp_path / "docs.trec"
    trec.write_text("<DOC><DOCNO> t1 </DOCNO><TEXT>trec text</TEXT></DOC>\n", encoding="utf-8")
    assert list(load_documents_from(trec)[0]["text"]) == ["trec text"]


def test_a_pdf_without_pypdf_says_which_extra_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "w.pdf"
    path.write_bytes(minimal_pdf(["text"]))
    monkeypatch.setitem(__import__("sys").modules, "pypdf", None)  # `import pypdf` now raises ImportError
    with pytest.raises(InputError, match=r"w\.pdf: is a PDF, and pypdf is not installed.*rankbench\[documents\]"):
        pdf_document(path)


@pytest.mark.parametrize("page", [
    "<!doctype html><html><head><title>T</title><meta charset=utf-8><h1>Guide</h1><p>Charge it fully.</p></html>",
    "<!DOCTYPE html><head><title>T</title><link rel=stylesheet href=s.css><body><h1>Guide</h1><p>Charge it fully.",
    "<title>T</title><h1>Guide</h1><p>Charge it fully.</p>",
    "<html><head><title>T</title><style>p {}</style><script>x = 1</script>\n<h1>Guide</h1>Charge it fully.",
])
def test_an_html5_page_without_its_optional_head_and_body_tags_keeps_its_body(page: str) -> None:
    """HTML5 lets a page omit </head> (and <head>, <body>): the head ends where a browser ends it, at the first tag
    or text that cannot be in a head. Before, the whole body counted as head: "holds no text"."""
    title, text = html_document(page)
    assert title == "T"
    assert section_ids(text) == ["guide"] and "Charge it fully." in text
    assert "x = 1" not in text and "p {}" not in text


def test_yaml_front_matter_is_metadata_not_a_section() -> None:
    """Jekyll/Hugo/MkDocs front matter was read as a setext heading ("title: ..." under a rule): a searchable
    section. It is left out; its title is the document's title."""
    title, text = markdown_document("---\ntitle: Refund policy\ntags: [money]\n---\n\nIntro words.\n\n## Delays\n\n"
                                    "Ten days.\n\n---\n\nAfter a rule.\n")
    assert title == "Refund policy"
    assert section_ids(text) == ["_intro", "delays"] and "tags" not in text and "money" not in text
    assert text.startswith("Intro words.") and "After a rule." in text  # a later rule stays text
    assert markdown_document("---\n- a list\n---\n# Kept\n")[1].startswith("---")  # not a mapping: no front matter
    assert markdown_document("---\r\nlayout: post\r\n...\r\n# Post\r\n") == ("Post", "# Post\n")


def test_unicode_line_separators_are_text_inside_a_line() -> None:
    """str.splitlines() breaks at U+2028, U+2029, U+001C-U+001E, U+0085, \\v, \\f: "# x" after one of them became
    a heading, and markdown-it's heading lines (which end at \\n only) were matched to the wrong lines."""
    separators = "\u2028\u2029\x1c\x1d\x1e\x85\x0b\x0c"
    for separator in separators:
        assert text_lines(f"a{separator}# b\r\nc\rd\n") == [f"a{separator}# b\r\n", "c\r", "d\n"]
        assert section_ids(f"intro{separator}# not a heading\n# Real\nbody\n") == ["_intro", "real"]
        title, text = markdown_document(f"intro{separator}still intro\n\n# Real heading\n\nbody\n")
        assert title == "Real heading" and section_ids(text) == ["_intro", "real-heading"]


def project_at(folder: Path) -> Path:
    """A rankbench project made from the documents beside it: config, corpus, questions, results, logs, state."""
    for name, text in {"config.yaml": "dataset: {name: p}\n", "corpus.jsonl": "{}\n",
                       "questions/v1.jsonl": "{}\n", "questions/frozen.lock": "{}\n",
                       "results/p/v1/comparison.md": "# p v1\n\nbm25 0.7\n",
                       "results/p/v1/comparison.html": "<h1>p v1</h1><p>bm25 0.7</p>",
                       "logs/run.txt": "done\n", ".snakemake/log/x.md": "# log\n"}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_documents_folder_holding_a_project_leaves_out_its_own_files_and_says_so(tmp_path: Path) -> None:
    """The project's result pages (comparison.md/.html) and logs were ingested as documents."""
    folder = write_documents(tmp_path / "docs")
    project_at(folder / "proj")
    documents, notes = load_documents_from(folder)
    assert list(documents["doc_id"]) == ["guide.html", "policies/refunds.md", "shipping_notes.txt", "warranty.pdf"]
    assert notes.project_files == [folder / "proj"]
    # The documents folder is itself a project (init's documents beside its config): its own files are left out.
    project_at(folder)
    documents, notes = load_documents_from(folder)
    assert list(documents["doc_id"]) == ["guide.html", "policies/refunds.md", "shipping_notes.txt", "warranty.pdf"]
    assert notes.project_files == [folder / name for name in ("config.yaml", "corpus.jsonl", "logs", "proj",
                                                              "questions", "results")]
    assert notes.hidden == [folder / ".snakemake"]


def test_links_leaving_the_folder_are_noted(tmp_path: Path) -> None:
    """A link to a file outside is read and named (init's summary says so); a link to a folder is not followed."""
    folder = write_documents(tmp_path / "docs")
    outside = tmp_path / "elsewhere"
    (outside / "more").mkdir(parents=True)
    (outside / "secret.md").write_text("# Outside\n\nnot in the folder\n", encoding="utf-8")
    (outside / "more" / "x.md").write_text("# X\n\nx\n", encoding="utf-8")
    (folder / "linked.md").symlink_to(outside / "secret.md")
    (folder / "inside.md").symlink_to(folder / "policies" / "refunds.md")
    (folder / "more").symlink_to(outside / "more", target_is_directory=True)
    documents, notes = load_documents_from(folder)
    assert {"linked.md", "inside.md"} <= set(documents["doc_id"]) and "more/x.md" not in set(documents["doc_id"])
    assert notes.outside == [folder / "linked.md"] and notes.linked_folders == [folder / "more"]
