"""`format: trec`: SGML documents, SGML or TSV topics and TREC qrels, errors naming file and line; a classic
collection (CACM) written as TREC files scores exactly as its BEIR copy."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import REPO, shared_dataset, snakemake

from rankbench.configuration.config import check_config
from rankbench.configuration.dataset_formats import corpus_files, corpus_source, load_documents
from rankbench.errors import InputError
from rankbench.io.loaders import load_beir_corpus, load_beir_questions
from rankbench.io.trec_topics import load_topics, load_trec_documents, load_trec_questions

SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
TINY = REPO / "tests" / "fixtures" / "beir-tiny"
CACM = shared_dataset("cacm")

DOCUMENTS = """<DOC>
<DOCNO> FT911-1 </DOCNO>
<HEADLINE>Markets &amp; money</HEADLINE>
<TEXT>
First <P>paragraph</P>.
</TEXT>
<TEXT>Second part.</TEXT>
</DOC>
<DOC><DOCNO>CACM-2</DOCNO>
<TITLE>Only a title</TITLE>
</DOC>
<DOC>
<DOCNO>X3</DOCNO>
Loose text without a TEXT element.
</DOC>
"""

TOPICS = """<top>
<num> Number: 401
<title> foreign minorities, Germany

<desc> Description:
What language and cultural differences impede the integration
of foreign minorities in Germany?

<narr> Narrative:
A relevant document will focus on the causes.
</top>

<top>
<num>Number: 402</num>
<title>behavioral genetics</title>
<desc>Description: What is happening in the field of behavioral genetics?</desc>
</top>
"""


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_sgml_documents_give_docno_title_and_text(tmp_path: Path) -> None:
    documents = load_trec_documents(write(tmp_path, "docs.trec", DOCUMENTS))
    assert documents["doc_id"].tolist() == ["FT911-1", "CACM-2", "X3"]
    assert documents["title"].tolist() == ["Markets & money", "Only a title", ""]
    assert documents["text"].tolist() == ["First  paragraph .\n\nSecond part.", "",
                                          "Loose text without a TEXT element."]


@pytest.mark.parametrize(("text", "where", "problem"), [
    ("<DOC><DOCNO>a</DOCNO></DOC>\n<DOC><TEXT>x</TEXT></DOC>\n", "line 2", "with 0 <DOCNO>"),
    ("<DOC><DOCNO>a</DOCNO></DOC>\n\n<DOC><DOCNO>a</DOCNO></DOC>\n", "lines 1 and 3", "repeat DOCNO 'a'"),
    ("<DOC><DOCNO>a b</DOCNO></DOC>\n", "line 1 (DOCNO 'a b')", "contains whitespace"),
    ("<DOC><DOCNO>a</DOCNO></DOC>\nstray words\n", "line 2", "holds text outside <DOC>"),
    ("<DOC><DOCNO>a</DOCNO>\n<DOC><DOCNO>b</DOCNO></DOC>\n", "line 1", "not closed before the next"),
    ("<DOC><DOCNO>a</DOCNO></DOC>\n<DOC><DOCNO>b</DOCNO>\n", "line 2", "without its pair"),
    (b"<DOC><DOCNO>a</DOCNO>\n<TEXT>caf\xe9</TEXT></DOC>\n", "line 2", "not valid UTF-8"),
])
def test_bad_sgml_documents_name_the_line(tmp_path: Path, text: str | bytes, where: str, problem: str) -> None:
    path = write(tmp_path, "docs.trec", text)
    with pytest.raises(InputError) as error:
        load_trec_documents(path)
    assert error.value.path == path and error.value.where == where, str(error.value)
    assert problem in str(error.value)


# 40,000 elements: the old parser took 12.6 s (line numbers counted from the start for every document) to over 150 s
# (a lazy `.*?` scanning to the end of the file from every unclosed tag) on these; a linear one takes ~0.2 s. A bound
# of 5 s of this process's CPU time leaves a 25-fold margin and is not moved by the other processes of the machine.
MANY = 40_000
LINEAR_CPU_SECONDS = 5.0
GOOD_DOC = "<DOC><DOCNO>d{}</DOCNO><TEXT>some words here</TEXT></DOC>\n"


def check_linear_load(load, path: Path, sizes: tuple[int, ...], where: str | None, problem: str | None) -> None:
    """load(path) gives one of `sizes` records, or the InputError at `where`, within the linear time bound."""
    start = time.process_time()
    if problem is None:
        assert len(load(path)) in sizes
    else:
        with pytest.raises(InputError) as error:
            load(path)
        assert error.value.path == path and error.value.where == where, str(error.value)
        assert problem in str(error.value)
    assert time.process_time() - start < LINEAR_CPU_SECONDS


@pytest.mark.parametrize(("text", "where", "problem"), [
    ("".join(f"<DOC><DOCNO>d{i}</DOCNO><TEXT>words</TEXT>\n" for i in range(MANY)), "line 1",
     "not closed before the next"),
    ("".join(GOOD_DOC.format(i) for i in range(MANY)) + "<DOC><DOCNO>last</DOCNO>\n", f"line {MANY + 1}",
     "never closed"),
    ("<DOC><DOCNO>a</DOCNO>\n" + "<TEXT>unclosed text\n" * MANY + "</DOC>\n", None, None),
    ("<DOC>\n" + "<DOCNO>unclosed\n" * MANY + "</DOC>\n", "line 1", f"{MANY} <DOCNO> elements, {MANY} of them"),
    ("".join(GOOD_DOC.format(i) for i in range(MANY)), None, None),
])
def test_sgml_documents_parse_in_linear_time_and_unclosed_ones_name_the_line(
        tmp_path: Path, text: str, where: str | None, problem: str | None) -> None:
    check_linear_load(load_trec_documents, write(tmp_path, "docs.trec", text), (1, MANY), where, problem)


@pytest.mark.parametrize(("tail", "where", "problem"), [
    ("", None, None),
    ("<top><num>last<title>never closed\n", f"line {MANY + 1}", "never closed"),
    ("</top>\n", f"line {MANY + 1}", "closes an element without its pair"),
])
def test_sgml_topics_parse_in_linear_time_and_unclosed_ones_name_the_line(
        tmp_path: Path, tail: str, where: str | None, problem: str | None) -> None:
    text = "".join(f"<top><num>{i}<title>topic {i}</top>\n" for i in range(MANY)) + tail
    check_linear_load(load_topics, write(tmp_path, "topics.txt", text), (MANY,), where, problem)


@pytest.mark.parametrize(("field", "expected"), [
    ("title", ["foreign minorities, Germany", "behavioral genetics"]),
    ("desc", ["What language and cultural differences impede the integration of foreign minorities in Germany?",
              "What is happening in the field of behavioral genetics?"]),
    ("title+desc", ["foreign minorities, Germany What language and cultural differences impede the integration of "
                    "foreign minorities in Germany?",
                    "behavioral genetics What is happening in the field of behavioral genetics?"]),
])
def test_sgml_topics_give_the_chosen_field(tmp_path: Path, field: str, expected: list[str]) -> None:
    topics = load_topics(write(tmp_path, "topics.txt", TOPICS), field)
    assert list(topics) == ["401", "402"]
    assert [text for text, _ in topics.values()] == expected


def test_tsv_topics_are_read_verbatim(tmp_path: Path) -> None:
    topics = load_topics(write(tmp_path, "topics.tsv", "1\tsorting  numbers\r\n\n2\thash tables\n"))
    assert {qid: text for qid, (text, _) in topics.items()} == {"1": "sorting  numbers", "2": "hash tables"}


@pytest.mark.parametrize(("text", "field", "where", "problem"), [
    ("<top>\n<num> Number: 1\n<title> t\n</top>\n", "desc", "line 1 (topic '1')", "has no <desc> text"),
    ("<top>\n<title> t\n</top>\n", "title", "line 1", "without a <num>"),
    ("<top><num>1<title>a</top>\n<top><num>1<title>b</top>\n", "title", "line 1 (topic '1') and line 2 (topic '1')",
     "repeat topic '1'"),
    ("<top><num>1<title>a\n<title>b</top>\n", "title", "line 2", "repeats the <title> field"),
    ("<top><num>1<title>a</top>\n<top><num>2<title>b\n", "title", "line 2", "without its pair"),
    ("1\tfirst\n2 second\n", "title", "line 2", "has no tab"),
    ("1\tfirst\n2\t  \n", "title", "line 2 (qid '2')", "blank question text"),
])
def test_bad_topics_name_the_line(tmp_path: Path, text: str, field: str, where: str, problem: str) -> None:
    path = write(tmp_path, "topics.txt", text)
    with pytest.raises(InputError) as error:
        load_topics(path, field)
    assert error.value.path == path and error.value.where == where, str(error.value)
    assert problem in str(error.value)


def test_questions_are_the_judged_topics_with_any_integer_grade(tmp_path: Path) -> None:
    topics = write(tmp_path, "topics.txt", TOPICS)
    qrels = write(tmp_path, "qrels.txt", "402 0 d1 4\n402 0 d2 -1\n402 0 d3 0\n")
    questions, labels = load_trec_questions(topics, qrels)
    assert questions[["qid", "question", "kind"]].values.tolist() == [["402", "behavioral genetics", "trec"]]
    assert labels.to_dict("records") == [{"qid": "402", "doc_id": d, "section": None, "grade": g}
                                         for d, g in (("d1", 4), ("d2", -1), ("d3", 0))]


@pytest.mark.parametrize(("qrels", "where", "problem"), [
    ("401 0 d1 1\n401 0 d2 2.5\n", "line 2 (question '401', id 'd2')", "grade '2.5' is not an integer"),
    ("401 0 d1 1\n401 d2 1\n", "line 2", "has 3 fields, expected 4"),
    ("401 0 d1 1\n999 0 d2 1\n", "topic '999'", "judges 1 topic(s) absent from topics.txt"),
])
def test_bad_qrels_are_refused_at_load_naming_the_line(tmp_path: Path, qrels: str, where: str, problem: str) -> None:
    path = write(tmp_path, "qrels.txt", qrels)
    with pytest.raises(InputError) as error:
        load_trec_questions(write(tmp_path, "topics.txt", TOPICS), path)
    assert error.value.path == path and error.value.where == where, str(error.value)
    assert problem in str(error.value)


def beir_to_trec(beir: Path, folder: Path, split: str = "test", topics_format: str = "sgml") -> dict[str, str]:
    """Write a BEIR folder as a classic TREC collection: SGML documents (TITLE, TEXT), SGML or TSV topics, qrels."""
    folder.mkdir(parents=True, exist_ok=True)
    docs, topics = [], []
    for line in (beir / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        escape = lambda text: text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # noqa: E731
        docs.append(f"<DOC>\n<DOCNO>{record['_id']}</DOCNO>\n<TITLE>{escape(record.get('title') or '')}</TITLE>\n"
                    f"<TEXT>\n{escape(record['text'])}\n</TEXT>\n</DOC>\n")
    for line in (beir / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        topics.append(f"<top>\n<num> Number: {record['_id']}\n<title> {record['text']}\n</top>\n\n"
                      if topics_format == "sgml" else f"{record['_id']}\t{record['text']}\n")
    qrels = [f"{q} 0 {d} {g}\n" for q, d, g in (row.split("\t") for row in
             (beir / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:])]
    files = {"corpus": "docs.trec", "topics": "topics.txt", "qrels": "qrels.txt"}
    for (_key, name), lines in zip(files.items(), (docs, topics, qrels)):
        (folder / name).write_text("".join(lines), encoding="utf-8")
    return {key: str(folder / name) for key, name in files.items()}


@pytest.mark.parametrize("topics_format", ["sgml", "tsv"])
def test_a_beir_folder_written_as_trec_loads_the_same(tmp_path: Path, topics_format: str) -> None:
    files = beir_to_trec(TINY, tmp_path, topics_format=topics_format)
    columns = ["doc_id", "title", "text"]
    trec_documents = load_trec_documents(Path(files["corpus"]))
    pd.testing.assert_frame_equal(trec_documents[columns], load_beir_corpus(TINY / "corpus.jsonl")[columns])
    questions, labels = load_trec_questions(Path(files["topics"]), Path(files["qrels"]))
    beir_questions, beir_labels = load_beir_questions(TINY / "queries.jsonl", TINY / "qrels" / "test.tsv")
    pd.testing.assert_frame_equal(questions[["qid", "question"]], beir_questions[["qid", "question"]])
    pd.testing.assert_frame_equal(labels, beir_labels)


def test_a_trec_corpus_may_be_beir_corpus_lines(tmp_path: Path) -> None:
    files = beir_to_trec(TINY, tmp_path)
    config = tiny_config({"format": "trec", "corpus": str(TINY / "corpus.jsonl")},
                         {"test": {"topics": files["topics"], "qrels": files["qrels"]}})
    source = corpus_source(config)
    assert source == {"corpus_format": "jsonl"}
    documents = load_documents("trec", corpus_files(config), source)
    pd.testing.assert_frame_equal(documents, load_beir_corpus(TINY / "corpus.jsonl"))
    config["dataset"]["corpus"] = files["corpus"]
    assert corpus_source(config) == {"corpus_format": "sgml"}


def tiny_config(dataset: dict, qsets: dict) -> dict:
    config = yaml.safe_load((TINY / "config.yaml").read_text())
    config.pop("diffs")
    config.update(dataset={"name": "x", "language": "english", **dataset}, qsets=qsets)
    return config


@pytest.mark.parametrize(("dataset", "qsets", "where", "problem"), [
    ({"format": "trec"}, {"t": {"topics": "a", "qrels": "b"}}, "dataset.corpus", "needs `corpus`"),
    ({"format": "trec", "corpus": "x"}, {"t": {"topics": "a"}}, "qsets.t.qrels", "needs `topics` and `qrels`"),
    ({"format": "trec", "corpus": "x"}, {"t": {"topics": "a", "qrels": "b", "split": "s"}}, "qsets.t.split",
     "is not read by a trec dataset"),
    ({"format": "beir", "path": str(TINY)}, {"t": {"split": "test", "topic_field": "desc"}}, "qsets.t.topic_field",
     "is not read by a beir dataset"),
    ({"format": "trec", "corpus": "x"}, {"t": {"topics": "a", "qrels": "b", "topic_field": "narr"}},
     "qsets.t.topic_field", "'narr' is not one of"),
])
def test_config_keys_of_the_format_are_checked(dataset: dict, qsets: dict, where: str, problem: str) -> None:
    with pytest.raises(InputError) as error:
        check_config(tiny_config(dataset, qsets), SCHEMA, "my.yaml")
    assert error.value.path == "my.yaml" and error.value.where == where, str(error.value)
    assert problem in str(error.value)


@pytest.mark.slow
def test_a_trec_config_with_bad_grades_fails_at_start_naming_the_qrels_line(tmp_path: Path) -> None:
    files = beir_to_trec(TINY, tmp_path / "data")
    Path(files["qrels"]).write_text(Path(files["qrels"]).read_text() + "1 0 2 x\n")
    config = tiny_config({"format": "trec", "corpus": files["corpus"]},
                         {"test": {"topics": files["topics"], "qrels": files["qrels"]}})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "--dry-run")
    assert result.returncode == 2
    assert f"{files['qrels']}, line 15 (question '1', id '2'): grade 'x' is not an integer" in result.stderr
    assert not (tmp_path / "results").exists()


def _aggregate(workdir: Path) -> pd.DataFrame:
    frame = pd.read_parquet(workdir / "results" / "cacm" / "test" / "aggregate.parquet")
    keys = ["method", "grain", "metric", "k"]
    return frame[frame["kind"] == "all"].drop(columns="kind").sort_values(keys).reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.skipif(CACM is None, reason="CACM not found at ../shared/datasets/cacm")
def test_cacm_as_trec_files_gives_the_beir_folder_figures(tmp_path: Path) -> None:
    """CACM written as SGML documents, SGML topics and TREC qrels scores BM25 exactly as its BEIR folder."""
    files = beir_to_trec(CACM, tmp_path / "trec-files")
    runs = {}
    for name, dataset, qsets in (
            ("beir", {"format": "beir", "path": str(CACM)}, {"test": {"split": "test"}}),
            ("trec", {"format": "trec", "corpus": files["corpus"]},
             {"test": {"topics": files["topics"], "qrels": files["qrels"]}})):
        workdir = tmp_path / name
        workdir.mkdir()
        config = {"dataset": {"name": "cacm", "language": "english", **dataset}, "qsets": qsets,
                  "chunker": "whole", "chunkers": {"whole": {"kind": "sections", "size": None}},
                  "methods": {"bm25": {"type": "bm25"}},
                  "evaluation": {"depth": 100, "ks": [1, 10, 100], "bootstrap_resamples": 1000}}
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        result = snakemake(workdir, "--cores", "2", "results/cacm/test/aggregate.parquet")
        assert result.returncode == 0, result.stderr[-3000:]
        runs[name] = _aggregate(workdir)
    pd.testing.assert_frame_equal(runs["trec"], runs["beir"])
    assert (runs["trec"]["n"] == 52).all()
