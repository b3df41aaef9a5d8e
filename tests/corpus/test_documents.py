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
from rankbench.corpus.sections import split_sections
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
    documents, skipped = folder_documents(folder)
    assert list(documents["doc_id"]) == ["guide.html", "policies/refunds.md", "shipping_notes.txt", "warranty.pdf"]
    assert list(documents["title"]) == ["Battery guide", "Refund policy", "shipping notes", "Warranty"]
    assert skipped == [folder / "logo.png"]
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
