"""A corpus from a folder of Markdown, HTML, plain-text and PDF files, or from a JSONL / BEIR / TREC collection.

Every document becomes a native record whose text is Markdown: the file's headings (HTML h1-h6, PDF pages) become
`#` heading lines, so sections and their slugs are those of corpus/sections.py. Document ids are the files' paths
relative to the folder (`policies/refunds.md`): stable and readable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
import yaml
from markdown_it import MarkdownIt

from rankbench.corpus.sections import heading_text, text_lines
from rankbench.errors import InputError, raise_all
from rankbench.io.loaders import DOCUMENT_COLUMNS, load_beir_corpus, load_corpus, read_jsonl
from rankbench.io.trec_topics import load_trec_documents

MARKDOWN_SUFFIXES = (".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
TEXT_SUFFIXES = (".txt", ".text")
PDF_SUFFIXES = (".pdf",)
SUPPORTED_SUFFIXES = MARKDOWN_SUFFIXES + HTML_SUFFIXES + TEXT_SUFFIXES + PDF_SUFFIXES
PDF_EXTRA_FIX = "PDF files need pypdf: `pip install 'rankbench[documents]'` (or `pip install pypdf`)."
_BLANKS = re.compile(r"\s")
_SPACES = re.compile(r"[ \t\r\f\v\xa0]+")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def document_id(relative: PurePosixPath) -> str:
    """The id of a document: its path relative to the folder, `/`-separated, blanks as `_` (ids hold no blank)."""
    return _BLANKS.sub("_", relative.as_posix())


def _decoded(path: Path) -> str:
    """A file's text as UTF-8 (a BOM accepted); a byte that is not UTF-8 is refused with its line."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise InputError(path, f"line {line}", f"is not valid UTF-8 (byte {error.start})",
                         "Save the file as UTF-8.") from None


def _body_line(line: str) -> str:
    """A line of body text that corpus/sections.py would take for a heading (`# x` in a code block) is indented by
    one space, so only the document's real headings mark sections."""
    return " " + line if heading_text(line) is not None else line


def _heading(level: int, text: str) -> str:
    return "#" * level + " " + " ".join(text.split())


def front_matter(source: str) -> tuple[dict[str, Any], str]:
    """A Markdown file's YAML front matter (Jekyll, Hugo, MkDocs: a `---` first line, a mapping, a `---` or `...`
    line) and the text after it; ({}, source) when it has none. Front matter is metadata, never a section."""
    match = _FRONT_MATTER.match(source)
    if not match:
        return {}, source
    try:
        fields = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError:
        return {}, source
    if not isinstance(fields, dict) and fields is not None:
        return {}, source
    return fields or {}, source[match.end():]


def markdown_document(source: str) -> tuple[str, str]:
    """(title, text) of a Markdown file, its headings found by markdown-it (ATX and setext, not `#` lines inside code)
    and written as ATX lines; the title is the front matter's `title` (else the first level-1 heading, else the
    first heading, else empty). YAML front matter is left out of the text (setext rules would make it a heading)."""
    fields, source = front_matter(source)
    tokens = MarkdownIt("commonmark").parse(source)
    lines = [line.rstrip("\r\n") for line in text_lines(source)]  # markdown-it's lines (its token maps)
    headings: dict[int, tuple[int, int, str]] = {}
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.map and tokens[index + 1].content.strip():
            headings[token.map[0]] = (token.map[1], int(token.tag[1]), tokens[index + 1].content)
    out: list[str] = []
    number = 0
    while number < len(lines):
        if number in headings:
            end, level, text = headings[number]
            out.append(_heading(level, text))
            number = end
        else:
            out.append(_body_line(lines[number]))
            number += 1
    ordered = [headings[start] for start in sorted(headings)]
    title = next((text for _, level, text in ordered if level == 1), ordered[0][2] if ordered else "")
    if isinstance(fields.get("title"), str) and fields["title"].strip():
        title = fields["title"]
    return " ".join(title.split()), "\n".join(out).strip("\n") + "\n"


class _HtmlText(HTMLParser):
    """Visible text of an HTML page as lines, h1-h6 as Markdown headings; script, style and the head are skipped.

    The head ends where a browser ends it (HTML5's tree construction): at `</head>`, at `<body>`, or at the first
    tag or text that cannot be in a head, since HTML5 lets a page omit `</head>` (and `<head>`, `<body>`)."""

    BLOCKS = frozenset({"address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
                        "footer", "form", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table",
                        "td", "th", "tr", "ul"})
    HIDDEN = frozenset({"script", "style", "template", "noscript", "svg"})
    HEAD_CONTENT = frozenset({"base", "link", "meta", "title", "script", "style", "template", "noscript"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.current: list[str] = []
        self.heading_level = 0
        self.hidden = 0
        self.in_title = False
        self.in_head = False
        self.page_title = ""
        self.headings: list[tuple[int, str]] = []

    def _flush(self) -> None:
        text = _SPACES.sub(" ", "".join(self.current)).strip()
        self.current = []
        if not text:
            return
        if self.heading_level:
            self.lines += ["", _heading(self.heading_level, text), ""]
            self.headings.append((self.heading_level, text))
        else:
            self.lines.append(_body_line(text))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "head":
            self.in_head = True
        elif self.in_head and tag not in self.HEAD_CONTENT:
            self.in_head = False  # <body>, or any body content: the head ended without its end tag
        if tag == "title":
            self.in_title = True
        elif tag in self.HIDDEN:
            self.hidden += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self.heading_level = int(tag[1])
        elif tag in self.BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self.in_head = False
        elif tag == "title":
            self.in_title = False
        elif tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self.heading_level = 0
        elif tag in self.BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.page_title += data
        elif self.in_head and not self.hidden and data.strip():
            self.in_head = False  # text cannot be in a head: a browser shows it in the body
        if not self.in_title and not self.in_head and not self.hidden:
            self.current.append(data.replace("\n", " "))


def html_document(source: str) -> tuple[str, str]:
    """(title, text) of an HTML page: the <title> (else the first h1, else empty) and its visible text."""
    parser = _HtmlText()
    parser.feed(source)
    parser.close()
    parser._flush()
    title = " ".join(parser.page_title.split()) or next((text for level, text in parser.headings if level == 1), "")
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(parser.lines)).strip("\n")
    return title, text + "\n" if text else ""


def text_document(source: str) -> tuple[str, str]:
    """(title, text) of a plain-text file: no title, the text as is (one section, no heading)."""
    return "", "\n".join(_body_line(line.rstrip()) for line in text_lines(source)).strip("\n") + "\n"


def pdf_document(path: Path) -> tuple[str, str]:
    """(title, text) of a PDF: its metadata title and the text of each page under a `## Page N` heading (a PDF has
    no reliable headings, so its sections are its pages: `page-1`, `page-2`...)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise InputError(path, None, "is a PDF, and pypdf is not installed", PDF_EXTRA_FIX) from None
    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise InputError(path, None, "is an encrypted PDF", "Save an unencrypted copy of it.")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = str(reader.metadata.get("/Title") or "") if reader.metadata else ""
    except InputError:  # a ValueError too: it is already the message, not a reader failure to wrap
        raise
    except (PyPdfError, OSError, ValueError, KeyError) as error:
        raise InputError(path, None, f"cannot be read as a PDF ({error})", "Check the file, or export it again as "
                         "PDF.") from None
    parts = [f"## Page {number}\n\n" + "\n".join(_body_line(line.rstrip()) for line in text_lines(text.strip()))
             for number, text in enumerate(pages, start=1) if text.strip()]
    if not parts:
        raise InputError(path, None, "holds no text (a scanned PDF?)", "Give a PDF with a text layer (run OCR on it).")
    return " ".join(title.split()), "\n\n".join(parts) + "\n"


_READERS: dict[str, Callable[[Path], tuple[str, str]]] = {
    **{suffix: lambda path: markdown_document(_decoded(path)) for suffix in MARKDOWN_SUFFIXES},
    **{suffix: lambda path: html_document(_decoded(path)) for suffix in HTML_SUFFIXES},
    **{suffix: lambda path: text_document(_decoded(path)) for suffix in TEXT_SUFFIXES},
    **{suffix: pdf_document for suffix in PDF_SUFFIXES},
}


# A rankbench project's own files: what `init` and the workflow write beside the documents it was made from.
PROJECT_OUTPUTS = ("config.yaml", "corpus.jsonl", "questions", "results", "logs", "benchmarks")


def is_project(folder: Path) -> bool:
    """A folder holding a rankbench project (its config beside the results, the workflow's state or a lock)."""
    return (folder / "config.yaml").is_file() and any(
        (folder / name).exists() for name in ("results", ".snakemake", "questions/frozen.lock"))


@dataclass
class FolderNotes:
    """What reading a documents folder left out, or reached outside it: init's summary names each."""

    other_type: list[Path] = field(default_factory=list)  # files of a type rankbench does not read
    hidden: list[Path] = field(default_factory=list)  # hidden files and folders (`.git`, `.snakemake`, `.DS_Store`)
    project_files: list[Path] = field(default_factory=list)  # a rankbench project's own files and result pages
    outside: list[Path] = field(default_factory=list)  # links to files outside the folder (read)
    linked_folders: list[Path] = field(default_factory=list)  # links to folders (not followed)
    templates: list[Path] = field(default_factory=list)  # HTML templates of a site generator (Jinja tags)


# A Jinja statement or expression (`{% if nav %}`, `{{ page.title }}`): an HTML file holding one is a site
# generator's template (mkdocs `overrides/`, Sphinx `_templates/`), its text no document's.
# Each tag at most 200 characters long: unbounded, every `{%` of a long line without `%}` scanned to its
# end (20,000 of them took 11 s).
_TEMPLATE_TAG = re.compile(r"\{%-?\s[^\n]{0,200}?-?%\}|\{\{-?\s*[\w.\[\]'\"|( )]{1,200}?\s*-?\}\}")


# The tags of what a page shows as text, not markup: code and preformatted blocks (a help page about templates shows
# the tags there; an escaped tag, `&#123;%`, is no tag at all).
_TEXT_BLOCK_TAG = re.compile(r"<(/?)(?:code|pre|kbd|samp|textarea)\b[^<>]{0,1000}>", re.IGNORECASE)


def _markup(text: str) -> str:
    """The text without the content of its code and preformatted blocks (nested ones too; an unclosed one runs to
    the end), in one pass."""
    parts, depth, position = [], 0, 0
    for match in _TEXT_BLOCK_TAG.finditer(text):
        if depth == 0:
            parts.append(text[position:match.start()])
        depth = max(depth + (-1 if match.group(1) else 1), 0)
        position = match.end()
    if depth == 0:
        parts.append(text[position:])
    return " ".join(parts)


def is_template(path: Path) -> bool:
    """Whether a file is an HTML template (a Jinja tag in its markup, outside code and preformatted blocks), not a
    document."""
    if path.suffix.lower() not in HTML_SUFFIXES:
        return False
    return _TEMPLATE_TAG.search(_markup(_decoded(path))) is not None


def _document_files(folder: Path, notes: FolderNotes) -> Iterator[Path]:
    """The files under a folder in path order, hidden files and folders (`.git`, `.snakemake`) and rankbench
    projects' own files (a project inside the folder whole, the folder's own config, corpus, questions and results
    when it is one) left out and noted; a link to a folder is not followed."""
    root = folder.resolve()
    projects = sorted({config.parent for config in folder.rglob("config.yaml") if is_project(config.parent)} |
                      ({folder} if is_project(folder) else set()), key=lambda project: -len(project.parts))
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        owner = next((project for project in projects if project in path.parents), None)  # the innermost
        hidden = next((n for n, part in enumerate(parts) if part.startswith(".")), None)
        if owner is not None and (owner != folder or parts[0] in PROJECT_OUTPUTS):
            top = owner if owner != folder else folder / parts[0]
            if top not in notes.project_files:
                notes.project_files.append(top)
        elif hidden is not None:
            if hidden == len(parts) - 1:  # the hidden file or folder itself, not each file in it
                notes.hidden.append(path)
        elif path.is_symlink() and path.is_dir():
            notes.linked_folders.append(path)
        elif path.is_file():
            if not path.resolve().is_relative_to(root):
                notes.outside.append(path)
            yield path


def _folder_document(folder: Path, path: Path, reader: Callable[[Path], tuple[str, str]],
                     first: dict[str, Path]) -> dict[str, object]:
    """One file of a documents folder as a row (its id noted in `first`), or its mistake raised."""
    doc_id = document_id(PurePosixPath(path.relative_to(folder).as_posix()))
    if doc_id in first:
        raise InputError(path, None, f"has the document id {doc_id!r} of {first[doc_id]} (blanks become `_`)",
                         "Rename one of the two files.")
    first[doc_id] = path
    title, text = reader(path)
    if not text.strip():
        raise InputError(path, None, "holds no text", "Remove the file, or write its content.")
    return {"doc_id": doc_id, "title": title or path.stem, "text": text, "version": None, "valid_from": None,
            "valid_to": None, "audience": "public", "lang": None,
            "metadata": json.dumps({"source": path.relative_to(folder).as_posix()})}


def folder_documents(folder: Path) -> tuple[pd.DataFrame, FolderNotes]:
    """The documents of a folder (DOCUMENT_COLUMNS, in path order) and what was left out or read from outside it;
    every file is read, and the mistakes of all of them raised together."""
    rows: list[dict[str, object]] = []
    notes = FolderNotes()
    first: dict[str, Path] = {}
    errors: list[InputError] = []
    for path in _document_files(folder, notes):
        reader = _READERS.get(path.suffix.lower())
        if reader is None:
            notes.other_type.append(path)
            continue
        try:  # every file is read: the mistakes of all of them are told at once
            if is_template(path):
                notes.templates.append(path)
                continue
            rows.append(_folder_document(folder, path, reader, first))
        except InputError as error:
            errors.append(error)
    raise_all(errors)
    if not rows:
        raise InputError(folder, None, "holds no Markdown, HTML, text or PDF file",
                         f"Put documents ({', '.join(SUPPORTED_SUFFIXES)}) in the folder, or give a JSONL, BEIR or "
                         "TREC collection.")
    return pd.DataFrame(rows, columns=DOCUMENT_COLUMNS), notes


def collection_documents(path: Path) -> pd.DataFrame:
    """The documents of an existing collection, by the project's loaders: a BEIR folder (corpus.jsonl), a JSONL file
    (native `doc_id` lines or BEIR `_id` lines) or a TREC SGML file."""
    if path.is_dir():
        return load_beir_corpus(path / "corpus.jsonl")
    if path.suffix.lower() == ".jsonl":
        first = next(read_jsonl(path), (0, {}))[1]
        return load_beir_corpus(path) if "_id" in first and "doc_id" not in first else load_corpus(path)
    return load_trec_documents(path)


def load_documents_from(path: Path) -> tuple[pd.DataFrame, FolderNotes]:
    """Documents from `rankbench init --documents`: a folder of files (BEIR when it holds corpus.jsonl and is no
    rankbench project) or a collection file; also what was left out of a folder or read from outside it."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, None, "does not exist", "Give a folder of documents or a JSONL, BEIR or TREC "
                         "collection.")
    if path.is_dir() and (is_project(path) or not (path / "corpus.jsonl").is_file()):
        return folder_documents(path)
    return collection_documents(path), FolderNotes()


def native_records(documents: pd.DataFrame) -> list[dict[str, object]]:
    """Native corpus records of DOCUMENT_COLUMNS rows: unset fields left out, metadata fields put back."""
    records = []
    for row in documents.to_dict("records"):
        metadata = json.loads(row.pop("metadata") or "{}")
        record = {key: value for key, value in row.items() if value is not None and not pd.isna(value)}
        records.append({**record, **{key: value for key, value in metadata.items() if key not in record}})
    return records
