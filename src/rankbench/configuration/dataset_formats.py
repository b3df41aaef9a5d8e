"""Dataset formats (native, beir, trec, ir_datasets): which files each reads and which loader reads them.

One dispatch shared by the start-of-run checks and the jobs (load_corpus, prepare_questions), on plain values
that reach the jobs through `params:`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from rankbench.errors import InputError
from rankbench.io.frozen import content_hash
from rankbench.io.ir_datasets_source import (
    corpus_digest,
    installed_version,
    load_ir_documents,
    load_ir_questions,
)
from rankbench.io.loaders import load_beir_corpus, load_beir_questions, load_corpus, load_questions, record_schema
from rankbench.io.trec_topics import load_trec_documents, load_trec_questions

# Per dataset format: the keys `dataset` needs, the keys each `qsets.<v>` needs (a tuple: exactly one of them),
# and the optional keys of either that only this format reads.
DATASET_KEYS: dict[str, tuple[tuple[str, ...], tuple[str | tuple[str, ...], ...], tuple[str, ...]]] = {
    "native": (("corpus", "lock"), ("path",), ()),
    "beir": (("path",), ("split",), ()),
    "trec": (("corpus",), ("topics", "qrels"), ("topic_field",)),
    "ir_datasets": (("id",), (("id", "split"),), ()),
}
_FORMAT_KEYS = {"corpus", "lock", "path", "id", "split", "topics", "qrels", "topic_field"}


def check_dataset_keys(config: Mapping[str, Any], source: str) -> None:
    """`dataset` and every `qsets.<v>` give what their format reads, and nothing another format reads."""
    dataset = config["dataset"]
    fmt = dataset["format"]
    needed, qset_needed, optional = DATASET_KEYS[fmt]
    blocks = [("dataset", dataset, needed)] + [(f"qsets.{name}", spec, qset_needed)
                                               for name, spec in config["qsets"].items()]
    for where, block, keys in blocks:
        alternatives = [key if isinstance(key, tuple) else (key,) for key in keys]
        wanted = " and ".join(" or ".join(f"`{k}`" for k in options) for options in alternatives)
        for options in alternatives:
            given = [key for key in options if block.get(key)]
            if len(given) > 1:
                raise InputError(source, where, f"gives both {' and '.join(f'`{k}`' for k in given)}",
                                 f"Give one: a {fmt} dataset needs {wanted}.")
            if not given:
                raise InputError(source, f"{where}.{options[0]}" if len(options) == 1 else where,
                                 f"is missing: a {fmt} dataset needs {wanted}",
                                 "See docs/reference/config.md, `dataset` and `qsets`.")
        used = {key for options in alternatives for key in options} | set(optional)
        for key in sorted(_FORMAT_KEYS & set(block) - used):
            raise InputError(source, f"{where}.{key}", f"is not read by a {fmt} dataset",
                             "Remove it, or see docs/reference/config.md for the keys of each format.")
    if fmt == "ir_datasets":
        try:
            installed_version()
        except InputError as error:
            raise InputError(source, "dataset.format", error.problem, error.fix) from None


def corpus_files(config: Mapping[str, Any]) -> list[str]:
    """The corpus file of a dataset (none for ir_datasets, whose cache holds it)."""
    dataset = config["dataset"]
    if dataset["format"] == "beir":
        return [f"{dataset['path']}/corpus.jsonl"]
    return [] if dataset["format"] == "ir_datasets" else [dataset["corpus"]]


def version_files(config: Mapping[str, Any], version: str) -> list[str]:
    """The files that make a question-set version: its JSONL, a BEIR split's queries and qrels, TREC topics and
    qrels (none for ir_datasets)."""
    dataset, spec = config["dataset"], config["qsets"][version]
    if dataset["format"] == "native":
        return [spec["path"]]
    if dataset["format"] == "beir":
        return [f"{dataset['path']}/queries.jsonl", f"{dataset['path']}/qrels/{spec['split']}.tsv"]
    return [spec["topics"], spec["qrels"]] if dataset["format"] == "trec" else []


def ir_datasets_id(config: Mapping[str, Any], version: str) -> str:
    """The ir_datasets id of a version: its `id`, or `<dataset.id>/<split>`."""
    spec = config["qsets"][version]
    return spec.get("id") or f"{config['dataset']['id']}/{spec['split']}"


def corpus_source(config: Mapping[str, Any]) -> dict[str, str]:
    """What, besides its files, says which corpus is loaded (a params value: a change reloads it)."""
    dataset = config["dataset"]
    if dataset["format"] == "ir_datasets":
        return {"id": dataset["id"], "ir_datasets": installed_version()}
    if dataset["format"] == "trec":
        return {"corpus_format": corpus_format(dataset["corpus"])}
    return {}


def version_source(config: Mapping[str, Any], version: str) -> dict[str, str]:
    """What, besides its files, says which questions a version holds (a params value: a change reloads them)."""
    dataset, spec = config["dataset"], config["qsets"][version]
    if dataset["format"] == "ir_datasets":
        return {"id": ir_datasets_id(config, version), "ir_datasets": installed_version()}
    if dataset["format"] == "trec":
        return {"topic_field": spec.get("topic_field", "title")}
    return {}


def corpus_format(path: str) -> str:
    """A TREC dataset's corpus: `jsonl` (BEIR lines: _id, title, text) for a .jsonl file, else `sgml`."""
    return "jsonl" if path.lower().endswith(".jsonl") else "sgml"


def load_documents(fmt: str, files: Sequence[str], source: Mapping[str, str],
                   schema: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The corpus's documents, every record checked, by the loader of the format."""
    if fmt == "ir_datasets":
        return load_ir_documents(source["id"])
    path = Path(files[0])
    if fmt == "native":
        return load_corpus(path, schema or record_schema("corpus"))
    if fmt == "trec" and source["corpus_format"] == "sgml":
        return load_trec_documents(path)
    return load_beir_corpus(path)


def load_version(fmt: str, files: Sequence[str], source: Mapping[str, str],
                 schema: Mapping[str, Any] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A version's questions and labels (grades checked at load, naming file and line), by the loader of the format."""
    paths = [Path(path) for path in files]
    if fmt == "ir_datasets":
        return load_ir_questions(source["id"])
    if fmt == "native":
        return load_questions(paths[0], schema or record_schema("questions"))
    if fmt == "trec":
        return load_trec_questions(paths[0], paths[1], source["topic_field"])
    return load_beir_questions(paths[0], paths[1])


def documents_digest(fmt: str, files: Sequence[str], source: Mapping[str, str]) -> str:
    """What documents.parquet is loaded from: the corpus file's sha256, or an ir_datasets id and version."""
    if fmt == "ir_datasets":
        return corpus_digest(source["id"], source["ir_datasets"])
    return content_hash([Path(path) for path in files])
