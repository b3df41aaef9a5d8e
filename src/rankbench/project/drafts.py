"""Draft question-set versions: `draft: true` in the config lets a version be edited and run again until
`rankbench freeze` registers it; `rankbench check` validates a version against the corpus first, so a typo never
burns a version name.

A version registered in the lock is frozen whatever its `draft` key says: frozen versions are never changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rankbench.configuration.dataset_formats import (
    corpus_files,
    corpus_source,
    load_documents,
    load_version,
    version_files,
    version_source,
)
from rankbench.configuration.defaults import evaluation_settings
from rankbench.corpus.label_checks import check_label_targets, label_findings, question_lines
from rankbench.errors import InputError
from rankbench.evaluation.metric_names import METRICS
from rankbench.evaluation.metrics import EXP_GAIN_MAX
from rankbench.io.config_file import load_config_file
from rankbench.io.frozen import check_frozen, check_version_name, freeze, guard_results, read_lock, results_record

_DRAFT_LINE = re.compile(r"\s*draft\s*:\s*(true|True|TRUE|yes)\s*(#.*)?")


@dataclass(frozen=True)
class VersionCheck:
    """A version that passed `check`: its counts, whether it is a draft, and findings that do not stop a run."""

    version: str
    draft: bool
    questions: int
    labels: int
    warnings: list[str]


def is_draft(config: Mapping[str, Any], version: str, lock: Mapping[str, str]) -> bool:
    """A version is a draft when the config says `draft: true` and the lock does not register it."""
    return config["qsets"][version].get("draft") is True and version not in lock


def rooted(config: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The config with its dataset and version paths taken from `root` (the project folder), as the workflow does."""
    def under(path: str) -> str:
        return path if Path(path).is_absolute() else str(root / path)

    dataset = {key: under(value) if key in ("corpus", "lock", "path") else value
               for key, value in config["dataset"].items()}
    qsets = {name: {key: under(value) if key in ("path", "topics", "qrels") else value for key, value in spec.items()}
             for name, spec in config["qsets"].items()}
    return {**config, "dataset": dataset, "qsets": qsets}


def _project(config_path: Path, root: Path | None) -> dict[str, Any]:
    config = load_config_file(config_path)
    if not isinstance(config.get("dataset"), dict) or not isinstance(config.get("qsets"), dict):
        raise InputError(config_path, None, "has no `dataset` and `qsets` blocks", "Give the project's config.yaml.")
    return rooted(config, root if root is not None else Path())


def _check_known(config: Mapping[str, Any], version: str, config_path: Path) -> None:
    if version not in config["qsets"]:
        raise InputError(config_path, "qsets", f"has no version {version!r} (it has: "
                         f"{', '.join(sorted(config['qsets']))})", "Add it under `qsets`, or give one of these.")


def _findings(questions: pd.DataFrame, labels: pd.DataFrame, documents: pd.DataFrame, path: Path) -> list[str]:
    """Findings of label validation on labels (stale or staff-only evidence), each with its line; questions without
    a relevant label are unanswerable by design and not repeated here."""
    findings = label_findings(questions, labels, documents)
    lines = question_lines(path)
    return [f"{path}, line {lines.get(row.qid, '?')} (qid {row.qid!r}): {row.problem} ({row.doc_id})"
            for row in findings.itertuples(index=False) if isinstance(row.doc_id, str)]


def check_version(config_path: Path, version: str, root: Path | None = None) -> VersionCheck:
    """Every record of a version and of the corpus, and every label against the corpus (documents, sections,
    grades, dates, audience), with the workflow's own loaders; a frozen version also against its hash. `root` is the
    project folder (default: here, as for the workflow)."""
    config_path = Path(config_path)
    config = _project(config_path, root)
    _check_known(config, version, config_path)
    dataset = config["dataset"]
    fmt = dataset["format"]
    documents = load_documents(fmt, corpus_files(config), corpus_source(config))
    files = version_files(config, version)
    questions, labels = load_version(fmt, files, version_source(config, version))
    path = Path(files[-1]) if files else config_path
    check_label_targets(labels, documents, path)
    check_evaluable(labels, evaluation_settings(config), path)  # as `run` refuses it at start
    lock = read_lock(dataset["lock"]) if fmt == "native" else {}
    if version in lock:
        check_frozen(version, [Path(file) for file in files], lock[version], dataset["lock"])
    warnings = _findings(questions, labels, documents, path) if fmt == "native" else []
    return VersionCheck(version, is_draft(config, version, lock), len(questions), len(labels), warnings)


def record_frozen_results(config: Mapping[str, Any], results: str) -> None:
    """When a run starts: each frozen native version that has results records the content they are made from (the
    record prepare_questions writes, see io.frozen.guard_results). A draft frozen unchanged is not recomputed, as
    nothing its results hold changed, so this is where its record is written."""
    dataset = config["dataset"]
    if dataset["format"] != "native":
        return
    lock = read_lock(dataset["lock"])
    for version in sorted(config["qsets"]):
        if version in lock and Path(results, version).is_dir():
            guard_results(version, lock[version], results_record(Path(results, version)))


def _line_of(path: Path | str, *fields: str) -> str | None:
    """`line N` of the first line of a labels file holding every field (a label: qid, doc id and grade), None for an
    ir_datasets source or when none does."""
    if not Path(path).is_file():
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if all(field in line for field in fields):
                return f"line {number}"
    return None


def check_evaluable(labels: pd.DataFrame, evaluation: Mapping[str, Any], path: Path | str) -> None:
    """A version the evaluate jobs can score with these settings, known at start: some question has a relevant
    label (else every table averages over no question), and the grades fit the exponential gain and ERR."""
    threshold = evaluation["relevance_threshold"]
    if not (labels["grade"] >= threshold).any():
        raise InputError(path, None, f"has no question with a relevant label (grade >= {threshold}, "
                         "evaluation.relevance_threshold): there is nothing to evaluate",
                         "Label at least one question with a relevant document, in a new question-set version.")
    limits = [(EXP_GAIN_MAX, "evaluation.gain: exponential (2^grade - 1 overflows above it)", "use `gain: linear`")
              ] if evaluation["gain"] == "exponential" else []
    limits += [(limit, f"{METRICS[name].label} (evaluation.metrics)", f"leave {name} out of evaluation.metrics")
               for name in evaluation["metrics"] if (limit := METRICS[name].max_grade) is not None]
    for limit, what, fix in limits:
        if labels["grade"].max() > limit:
            row = labels.loc[labels["grade"].idxmax()]
            raise InputError(path, _line_of(path, row["qid"], row["doc_id"], str(row["grade"])) or
                             f"qid {row['qid']!r}", f"labels {row['doc_id']!r} with grade {row['grade']}, above the "
                             f"{limit} that {what} takes", f"Map the grades onto 0..{limit} in a new question-set "
                             f"version, or {fix}.")


def drop_draft_line(config_path: Path, version: str) -> bool:
    """Remove the `draft: true` line of a version from a config (block style), keeping every other byte; False
    when there is no such line to remove."""
    text = config_path.read_text(encoding="utf-8")
    root = yaml.compose(text)
    for key, value in getattr(root, "value", []):
        if key.value != "qsets" or not isinstance(value, yaml.MappingNode):
            continue
        for name, spec in value.value:
            if name.value != version or not isinstance(spec, yaml.MappingNode) or spec.flow_style:
                continue
            for field, setting in spec.value:
                lines = text.splitlines(keepends=True)
                line = field.start_mark.line
                if field.value == "draft" and setting.end_mark.line == line and \
                        _DRAFT_LINE.fullmatch(lines[line].rstrip("\r\n")):
                    config_path.write_text("".join(lines[:line] + lines[line + 1:]), encoding="utf-8")
                    return True
    return False


def freeze_draft(config_path: Path, version: str, root: Path | None = None) -> tuple[str, Path, bool]:
    """Check a version against the corpus, register it in the project's lock, and drop its `draft: true` line:
    (sha256, lock, whether the config was edited). Nothing is registered unless the check passes."""
    config_path = Path(config_path)
    check_version_name(version, "--version")
    check = check_version(config_path, version, root)
    config = _project(config_path, root)
    if config["dataset"]["format"] != "native":
        raise InputError(config_path, "dataset.format", f"is {config['dataset']['format']!r}: its versions are "
                         "fixed by their source files and need no freezing", "Freeze native versions only.")
    lock = Path(config["dataset"]["lock"])
    digest = freeze(Path(config["qsets"][version]["path"]), version, lock)
    edited = check.draft and drop_draft_line(config_path, version)
    return digest, lock, edited
