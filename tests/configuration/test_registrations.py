"""What a method type's helpers register for the shared rules is checked against its registry entry when a run starts
and by `rankbench check` (configuration/registrations.py): a forgotten INDEX_NAMES entry or index stats record is
named with its type and file, never a MissingInputException or a quietly shorter plan later."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from workflow_helpers import REPO

from rankbench.cli import main
from rankbench.configuration import registrations
from rankbench.configuration.registrations import METHOD_RULES, check_registration_files, check_tables, filled_tables
from rankbench.errors import InputError
from rankbench.retrieval.registry import METHOD_TYPES, REGISTRATIONS, IndexStage, MethodType

TFIDF = MethodType("lexical", {"sublinear": True, "chunker": None}, run_rule="retrieve_tfidf",
                   index=IndexStage("tfidf_index", ("chunker", "method")))
TFIDF_HELPERS = '''
def tfidf_index_name(method):
    return shared_index_name(method, "tfidf_index", lambda m: METHOD_SPECS[m]["sublinear"])

'''


@pytest.fixture
def methods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped helpers files, read in place of the package's, and a new `tfidf` type in the registry
    with a named index (its `method` wildcard)."""
    folder = tmp_path / "methods"
    shutil.copytree(METHOD_RULES, folder)
    monkeypatch.setattr(registrations, "METHOD_RULES", folder)
    monkeypatch.setitem(METHOD_TYPES, "tfidf", TFIDF)
    return folder


def test_the_shipped_types_register_what_their_entries_declare() -> None:
    check_registration_files()
    filled = {path.name: set(filled_tables(path)) for path in METHOD_RULES.glob("*_common.smk")}
    assert filled["dense_common.smk"] == {"INDEX_NAMES", *METHOD_TYPES["dense"].registers}
    assert filled["rerank_common.smk"] == set(METHOD_TYPES["rerank"].registers) >= {"RERANKED_METHODS", "SERVED_FILES"}


def test_a_new_type_without_its_index_name_fails_rankbench_check(methods: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (methods / "tfidf_common.smk").write_text(TFIDF_HELPERS)
    monkeypatch.chdir(REPO)
    assert main(["check", "--config", "tests/fixtures/mini/config.yaml"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("rankbench: workflow/rules/methods/tfidf_common.smk, method type 'tfidf': registers no "
                            'INDEX_NAMES["tfidf_index"], which its index needs: rule tfidf_index names its jobs')
    assert 'Add `INDEX_NAMES["tfidf_index"] = tfidf_index_name`' in error
    (methods / "tfidf_common.smk").write_text(TFIDF_HELPERS + 'INDEX_NAMES["tfidf_index"] = tfidf_index_name\n')
    check_registration_files(methods)
    (methods / "tfidf_common.smk").unlink()  # no helpers file at all: the same message, on the file to write
    with pytest.raises(InputError, match=r"tfidf_common.smk, method type 'tfidf': registers no INDEX_NAMES"):
        check_registration_files(methods)


def test_a_table_declared_but_not_filled_or_filled_but_not_declared_is_named(methods: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(METHOD_TYPES, "tfidf", MethodType("lexical", {}, run_rule="retrieve_tfidf",
                                                          index=TFIDF.index, registers=("INDEX_STATS",)))
    (methods / "tfidf_common.smk").write_text(TFIDF_HELPERS + 'INDEX_NAMES["tfidf_index"] = tfidf_index_name\n')
    with pytest.raises(InputError, match=r"method type 'tfidf': fills no INDEX_STATS, which its registry entry "
                                         r"declares \(method -> the size and build-time record"):
        check_registration_files(methods)
    monkeypatch.setitem(METHOD_TYPES, "tfidf", TFIDF)
    (methods / "tfidf_common.smk").write_text(TFIDF_HELPERS + 'INDEX_NAMES["tfidf_index"] = tfidf_index_name\n'
                                              "INDEX_STATS.update({m: f'{m}.json' for m in METHOD_SPECS})\n")
    with pytest.raises(InputError, match=r"method type 'tfidf': fills INDEX_STATS, which its registry entry does "
                                         r"not declare"):
        check_registration_files(methods)
    (methods / "tfidf_common.smk").write_text(TFIDF_HELPERS + 'INDEX_NAMES["tfidf"] = tfidf_index_name\n')
    with pytest.raises(InputError, match=r"(?s)2 mistakes.*registers no INDEX_NAMES\[\"tfidf_index\"\].*fills "
                                         r"INDEX_NAMES\[\"tfidf\"\], but no rule tfidf builds its index \(its registry "
                                         r"entry's: tfidf_index\)"):
        check_registration_files(methods)


def test_a_shipped_type_that_stops_registering_is_named(methods: Path) -> None:
    """Each table a shipped type owes, taken out of its file, is found (not only INDEX_NAMES)."""
    for name, kind in METHOD_TYPES.items():
        for table in kind.owed if name != "tfidf" else ():
            path = registrations.helpers_file(name, kind, methods)
            text = path.read_text()
            path.write_text(re.sub(rf"^{table}\b", f"UNREAD_{table}", text, flags=re.MULTILINE))
            with pytest.raises(InputError, match=rf"{path.name}, method type '{name}': (registers|fills) no {table}"):
                check_registration_files(methods)
            path.write_text(text)


def test_the_tables_built_hold_every_method_that_needs_an_entry() -> None:
    tables = {name: {} if name.startswith("INDEX") else [] for name in REGISTRATIONS}
    specs = {"bm25": {"type": "bm25"}, "dense": {"type": "dense", "encoder": "e"},
             "rr": {"type": "rerank", "input": "bm25"}, "rrf": {"type": "rrf", "inputs": ["bm25"]}}
    with pytest.raises(InputError) as caught:
        check_tables(specs, tables)
    assert str(caught.value).splitlines()[1:4] == [
        "- workflow/rules/methods/bm25_common.smk, method type 'bm25': registers no INDEX_NAMES[\"bm25_index\"], so "
        "the index method 'bm25' searches has no name. Add it (docs/development.md, \"Add a method type\").",
        "- workflow/rules/methods/dense_common.smk, method type 'dense': registers no INDEX_NAMES[\"faiss_index\"], "
        "so the index method 'dense' searches has no name. Add it (docs/development.md, \"Add a method type\").",
        "- workflow/rules/methods/dense_common.smk, method type 'dense': puts method 'dense' in no INDEX_STATS "
        "(method -> the size and build-time record of its index (every method building one)). Fill INDEX_STATS for "
        "every method of the type (docs/development.md, \"Add a method type\")."]
    assert "puts method 'rr' in no RERANKED_METHODS" in str(caught.value)
    tables.update(INDEX_NAMES={"bm25_index": str, "faiss_index": str}, INDEX_STATS={"dense": "d.json"},
                  RERANKED_METHODS=["rr"])
    check_tables(specs, tables)
    tables["ANN_RECALL_METHODS"] = ["bm25"]
    with pytest.raises(InputError, match="method type 'bm25': puts method 'bm25' in ANN_RECALL_METHODS, which its "
                                         "registry entry does not declare"):
        check_tables(specs, tables)
    with pytest.raises(ValueError, match="`registers` names INDEX_NAMES"):
        MethodType("lexical", run_rule="r", registers=("INDEX_NAMES",))
