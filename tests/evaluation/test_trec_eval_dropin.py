"""`rankbench eval` with trec_eval's flags prints trec_eval's lines, and their values are pytrec_eval's (the
trec_eval C code) per topic and as means, on CACM (BM25 by bm25s, 52 judged topics) and on small tied runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval
from workflow_helpers import shared_dataset

from rankbench.cli import main

CACM = shared_dataset("cacm")
# trec_eval's printed name -> pytrec_eval's key
COMMON = {"P_5": "P_5", "P_10": "P_10", "recall_100": "recall_100", "ndcg_cut_10": "ndcg_cut_10", "ndcg": "ndcg",
          "map": "map", "map_cut_100": "map_cut_100", "recip_rank": "recip_rank", "Rprec": "Rprec", "bpref": "bpref",
          "success_1": "success_1", "num_ret": "num_ret", "num_rel": "num_rel", "num_rel_ret": "num_rel_ret"}
MEASURES = ["P.5,10", "recall.100", "ndcg_cut.10", "ndcg", "map", "map_cut.100", "recip_rank", "Rprec", "bpref",
            "success.1", "num_ret", "num_rel", "num_rel_ret", "num_q", "runid"]


def lines_of(capsys: pytest.CaptureFixture[str], *args: str) -> list[list[str]]:
    assert main(["eval", *args]) == 0
    return [line.split("\t") for line in capsys.readouterr().out.splitlines()]


def pytrec(qrels: Path, run: Path, level: int = 1) -> dict[str, dict[str, float]]:
    with open(qrels) as q, open(run) as r:
        evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), set(COMMON.values()),
                                                   relevance_level=level)
        return evaluator.evaluate(pytrec_eval.parse_run(r))


@pytest.fixture(scope="module")
def cacm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """CACM's qrels as TREC and a BM25 top-100 run of its 52 judged topics (bm25s, ~1 s)."""
    if CACM is None:
        pytest.skip("CACM not found in the shared datasets (../shared/datasets or $RANKBENCH_SHARED_DATASETS)")
    import bm25s

    folder = tmp_path_factory.mktemp("cacm")
    docs = [json.loads(line) for line in (CACM / "corpus.jsonl").open()]
    queries = {(q := json.loads(line))["_id"]: q["text"] for line in (CACM / "queries.jsonl").open()}
    rows = [line.rstrip("\n").split("\t") for line in (CACM / "qrels" / "test.tsv").open()][1:]
    qids = sorted({row[0] for row in rows})
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows))
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([d.get("title", "") + " " + d["text"] for d in docs], stopwords="en",
                                   show_progress=False), show_progress=False)
    found, scores = retriever.retrieve(bm25s.tokenize([queries[q] for q in qids], stopwords="en",
                                                      show_progress=False), k=100, show_progress=False)
    (folder / "bm25.trec").write_text("".join(f"{q} Q0 {docs[i]['_id']} {rank} {float(s)!r} bm25\n"
                                              for q, ids, ss in zip(qids, found, scores)
                                              for rank, (i, s) in enumerate(zip(ids, ss), 1)))
    return folder / "qrels.txt", folder / "bm25.trec"


def test_cacm_per_topic_and_all_lines_equal_pytrec_eval(cacm: tuple[Path, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = cacm
    reference = pytrec(qrels, run)
    lines = lines_of(capsys, "-q", *[f"-m{m}" for m in MEASURES], str(qrels), str(run))
    assert all(len(line) == 3 and len(line[0]) >= 22 for line in lines)  # trec_eval's "%-22s\t%s\t%s"
    got = {(name.strip(), qid): value for name, qid, value in lines}
    assert got[("runid", "all")] == "bm25" and got[("num_q", "all")] == str(len(reference)) == "52"
    checked = 0
    for qid, values in reference.items():
        for ours, theirs in COMMON.items():
            expected = values[theirs]
            text = got[(ours, qid)]
            assert text == (str(int(expected)) if ours.startswith("num_") else f"{expected:.4f}"), (ours, qid)
            checked += 1
    for ours, theirs in COMMON.items():
        values = [v[theirs] for v in reference.values()]
        expected = sum(values) if ours.startswith("num_") else sum(values) / len(values)
        assert got[(ours, "all")] == (str(int(expected)) if ours.startswith("num_") else f"{expected:.4f}"), ours
    assert checked == 52 * len(COMMON)


def test_the_issue_command_prints_trec_eval_lines(cacm: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """`rankbench eval -m ndcg_cut.10 -m P.5 -q qrels run`, as a user types it."""
    qrels, run = cacm
    lines = lines_of(capsys, "-m", "ndcg_cut.10", "-m", "P.5", "-q", str(qrels), str(run))
    reference = pytrec(qrels, run)
    assert {name.strip() for name, _, _ in lines} == {"ndcg_cut_10", "P_5"}
    for name, qid, value in lines:
        if qid != "all":
            assert value == f"{reference[qid][name.strip()]:.4f}"


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    """q1 judged and retrieved; q2 judged, all grade 0, retrieved (a zero topic); q3 judged, not retrieved; q4 only
    in the run; tied scores broken by docno desc; grade 1 and 2 for -l."""
    qrels = write(tmp_path / "qrels", ["q1 0 a 1", "q1 0 b 2", "q1 0 c 0", "q2 0 a 0", "q3 0 z 1", "q3 0 y 2"])
    run = write(tmp_path / "run", ["q1 Q0 a 1 1.0 tagged", "q1 Q0 c 2 1.0 tagged", "q1 Q0 b 3 0.5 tagged",
                                   "q1 Q0 d 4 0.25 tagged", "q2 Q0 a 1 3 tagged", "q4 Q0 a 1 1 tagged"])
    return qrels, run


@pytest.mark.parametrize("flags", [[], ["-c"], ["-l", "2"], ["-M", "2"], ["-c", "-M", "1", "-l", "2"]])
def test_topics_flags_and_levels_follow_trec_eval(small: tuple[Path, Path], flags: list[str],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Without -c the topics of both files (q1, and q2 scoring 0); -c adds q3 at 0; -M cuts; -l sets relevance."""
    qrels, run = small
    level = int(flags[flags.index("-l") + 1]) if "-l" in flags else 1
    depth = int(flags[flags.index("-M") + 1]) if "-M" in flags else None
    if depth:  # trec_eval's -M keeps each topic's top N: the reference gets the same cut run
        kept = [line for line in run.read_text().splitlines()]
        by_topic: dict[str, list[str]] = {}
        for line in kept:
            by_topic.setdefault(line.split()[0], []).append(line)
        ranked = [line for lines in by_topic.values() for line in sorted(
            lines, key=lambda x: (-float(x.split()[4]), [-ord(c) for c in x.split()[2]]))[:depth]]
        reference_run = write(run.with_name("cut"), ranked)
    else:
        reference_run = run
    reference = pytrec(qrels, reference_run, level)
    lines = lines_of(capsys, "-q", *flags, *[f"-m{m}" for m in MEASURES], str(qrels), str(run))
    got = {(name.strip(), qid): value for name, qid, value in lines}
    topics = {qid for _, qid, _ in lines if qid != "all"}
    assert topics == ({"q1", "q2", "q3"} if "-c" in flags else {"q1", "q2"})
    assert got[("runid", "all")] == "tagged"
    for qid in topics & set(reference):
        for ours, theirs in COMMON.items():
            expected = reference[qid][theirs]
            assert got[(ours, qid)] == (str(int(expected)) if ours.startswith("num_") else f"{expected:.4f}"), \
                (ours, qid)
    if "-c" in flags:
        assert got[("map", "q3")] == "0.0000" and got[("num_ret", "q3")] == "0"
    assert got[("num_q", "all")] == str(len(topics))


def test_zero_topics_can_be_excluded_and_n_drops_the_summary(small: tuple[Path, Path],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = small
    included = {qid: v for n, qid, v in lines_of(capsys, "-m", "map", str(qrels), str(run))}
    excluded = {qid: v for n, qid, v in lines_of(capsys, "-m", "map", "--zero-topics", "exclude", str(qrels),
                                                  str(run))}
    assert float(included["all"]) == pytest.approx(float(excluded["all"]) / 2, abs=1e-4)  # q2 scores 0 there
    assert all(qid != "all" for _, qid, _ in lines_of(capsys, "-q", "-n", "-m", "map", str(qrels), str(run)))


def test_a_bad_measure_is_refused_naming_it(small: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "-m", "P.five", *map(str, small)])
    assert "P.five" in capsys.readouterr().err


def test_version_and_the_default_table_stays(small: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--version"])
    assert "rankbench eval" in capsys.readouterr().out
    qrels, run = small
    assert main(["eval", str(qrels), str(run), "--metrics", "map"]) == 0
    out = capsys.readouterr().out
    assert "95% CI" in out and "tagged" in out  # the table, the run named by its tag
    assert main(["eval", str(qrels), str(run), "--zero-topics", "include"]) == 2  # the table cannot include them
    assert "applies to trec_eval's output only" in capsys.readouterr().err


def random_case(folder: Path, seed: int) -> tuple[Path, Path]:
    """Random graded qrels (-1..3, some topics with no grade >= 2 or 3 but positive ones) and a run with tied
    scores (multiples of 1/4, exact in trec_eval's 32-bit floats) over partly shared topics and documents."""
    import random

    rng = random.Random(seed)
    docs = [f"d{i:02d}" for i in range(30)]
    qrels, run = [], []
    for topic in range(rng.randint(1, 8)):
        top = rng.choice([0, 1, 2, 3])  # the topic's highest grade: some topics have none at -l 2 or 3
        for doc in rng.sample(docs, rng.randint(1, 12)):
            qrels.append(f"t{topic} 0 {doc} {rng.randint(-1, top)}")
        if rng.random() < 0.8:
            for rank, doc in enumerate(rng.sample(docs, rng.randint(1, 25)), 1):
                run.append(f"t{topic} Q0 {doc} {rank} {rng.randint(0, 8) / 4} r{seed}")
    run.append(f"unjudged Q0 d00 1 1.0 r{seed}")
    return write(folder / f"qrels{seed}", qrels), write(folder / f"run{seed}", run)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_random_graded_cases_equal_pytrec_eval_at_every_level(tmp_path: Path, level: int,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Per topic and `all`, on 40 random cases: with -l N a topic with positive labels but none >= N keeps its
    graded nDCG (trec_eval's ndcg reads every positive grade), where it used to score 0."""
    graded_topics_without_relevant = 0
    for seed in range(40):
        qrels, run = random_case(tmp_path, seed)
        reference = pytrec(qrels, run, level)
        if not reference:
            continue
        lines = lines_of(capsys, "-q", "-l", str(level), *[f"-m{m}" for m in MEASURES], str(qrels), str(run))
        got = {(name.strip(), qid): value for name, qid, value in lines}
        for qid, values in reference.items():
            graded_topics_without_relevant += values["num_rel"] == 0 and values["ndcg"] > 0
            for ours, theirs in COMMON.items():
                expected = values[theirs]
                assert got[(ours, qid)] == (str(int(expected)) if ours.startswith("num_") else f"{expected:.4f}"), \
                    (seed, ours, qid)
        for ours, theirs in COMMON.items():
            column = [v[theirs] for v in reference.values()]
            expected = sum(column) if ours.startswith("num_") else sum(column) / len(column)
            assert got[(ours, "all")] == (str(int(expected)) if ours.startswith("num_") else f"{expected:.4f}"), \
                (seed, ours)
    assert graded_topics_without_relevant > 0 if level > 1 else graded_topics_without_relevant == 0


def test_measures_print_in_trec_eval_order_whatever_the_order_of_m(small: tuple[Path, Path],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """trec_eval prints its measure table's order (runid, num_q, ..., map, Rprec, bpref, recip_rank, P, recall,
    ndcg, ndcg_cut, map_cut, success), cutoffs ascending: a plain diff against its output passes."""
    lines = lines_of(capsys, "-m", "success.10,1", "-m", "ndcg_cut.10,5", "-m", "P.10,5", "-m", "map", "-m", "ndcg",
                     "-m", "recall.5", "-m", "num_rel", "-m", "runid", "-m", "bpref", *map(str, small))
    assert [name.strip() for name, _, _ in lines] == [
        "runid", "num_rel", "map", "bpref", "P_5", "P_10", "recall_5", "ndcg", "ndcg_cut_5", "ndcg_cut_10",
        "success_1", "success_10"]


@pytest.mark.parametrize("run_lines", [["q9 Q0 a 1 1.0 other"], []])
def test_a_run_sharing_no_topic_is_refused_as_trec_eval_refuses_it(small: tuple[Path, Path], run_lines: list[str],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """trec_eval: "No queries with both results and relevance info", nothing printed; it used to be a KeyError."""
    qrels, _ = small
    run = write(qrels.with_name("elsewhere.run"), run_lines)
    assert main(["eval", "-q", "-m", "ndcg_cut.10", str(qrels), str(run)]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "elsewhere.run" in captured.err and "No queries with both results and relevance info" in captured.err
