"""Benchmark every rankbench metric (per_query_metrics with the pollution metrics) against pytrec_eval (and ranx
if installed).

Run: .venv/bin/python benchmarks/bench_metrics.py [--before OLD_METRICS_PY]
Deterministic synthetic data: 10,000 questions x 100 results, graded labels 0..3.
Reports the median over --repeats rounds (3) of CPU time (user + sys of this process: everything timed runs on one
thread, so other jobs on a shared machine inflate it far less than wall time); each round calls every contender once
in turn, so a change of load falls on all alike. No assertions on time.
Ours is timed from string DataFrames and from dictionary-coded ones (ids as categoricals over one vocabulary per
id kind, as the workflow's evaluate job codes them once), on pytrec_eval's own metrics and on all 13, and against
a plain memory pass over the coded arrays (each read once, summed). `--before FILE` also times another version of
rankbench/evaluation/metrics.py on the same data in the same process (e.g. `git show
<commit>:src/rankbench/evaluation/metrics.py > /tmp/metrics_before.py`), for before/after figures side by side.
From files: the run and labels written as the workflow writes them and scored as its evaluate job does (both grains,
grade shares), with ids read as Parquet dictionary codes, read as strings and coded once, and read as strings.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rankbench.evaluation.metrics import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
    per_query_metrics,
)
from rankbench.evaluation.scoring import dictionary_coded, evaluate_run, grade_distribution
from rankbench.io.files import write_parquet
from rankbench.io.qrels import QRELS_COLUMNS
from rankbench.io.ranked_lists import RUN_COLUMNS

N_QUESTIONS = 10_000
DEPTH = 100
N_ITEMS = 500_000
KS = (1, 3, 5, 10, 100)
REPEATS = 3
TREC_MEASURES = {
    f"{m}.{','.join(map(str, KS))}" for m in ("P", "recall", "ndcg_cut", "map_cut", "success")
} | {"recip_rank", "Rprec"}


def synthetic(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run (10k x 100, ranks by score desc / id desc) and graded qrels (~12 labels a question)."""
    rng = np.random.default_rng(seed)
    qids = np.array([f"q{i:05d}" for i in range(N_QUESTIONS)], dtype=object)
    item_names = np.array([f"d{i:06d}" for i in range(N_ITEMS)], dtype=object)
    items = np.stack([rng.choice(N_ITEMS, DEPTH, replace=False) for _ in range(N_QUESTIONS)])
    scores = np.round(rng.normal(size=(N_QUESTIONS, DEPTH)), 2)
    # trec_eval order: score desc, then id desc (ids are zero-padded, so code order = string order).
    order = np.lexsort((-items, -scores), axis=1)
    items = np.take_along_axis(items, order, axis=1)
    scores = np.take_along_axis(scores, order, axis=1)
    run = pd.DataFrame({
        "qid": np.repeat(qids, DEPTH),
        "item_id": item_names[items.ravel()],
        "doc_id": item_names[(items // 5 * 5).ravel()],  # five chunks per document, for the pollution metrics
        "rank": np.tile(np.arange(1, DEPTH + 1), N_QUESTIONS),
        "score": scores.ravel(),
    })
    n_labels = 12
    # Half the labels come from the run (mostly near the top), half from outside it.
    from_run = np.take_along_axis(items, rng.integers(0, DEPTH, (N_QUESTIONS, n_labels // 2)) // 2, axis=1)
    outside = rng.integers(0, N_ITEMS, (N_QUESTIONS, n_labels // 2))
    label_items = np.concatenate([from_run, outside], axis=1)
    qrels = pd.DataFrame({
        "qid": np.repeat(qids, n_labels),
        "item_id": item_names[label_items.ravel()],
        "grade": rng.integers(0, 4, N_QUESTIONS * n_labels),
    }).drop_duplicates(["qid", "item_id"], ignore_index=True)
    return run, qrels


def median_time(fn: Callable[[], object], repeats: int = REPEATS) -> tuple[float, object]:
    """Median CPU time (user + sys) of `repeats` calls and the last result."""
    times, results = alternated({"fn": fn}, repeats)
    return times["fn"], results["fn"]


def alternated(fns: dict[str, Callable[[], object]], repeats: int = REPEATS
               ) -> tuple[dict[str, float], dict[str, object]]:
    """Median CPU time of each function over `repeats` rounds, each round calling every function once in turn (a
    change of load on the shared machine falls on all alike), and each one's last result."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    results: dict[str, object] = {}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            results[name] = fn()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(t) for name, t in times.items()}, results


def coded(run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run and qrels with dictionary-coded ids, coded as the workflow's evaluate job does (chunk grain)."""
    coded_run, coded_qrels = dictionary_coded(run.rename(columns={"item_id": "chunk_id"}), qrels)
    return coded_run.assign(item_id=coded_run["chunk_id"]), coded_qrels


def memory_pass(run: pd.DataFrame, qrels: pd.DataFrame) -> int:
    """One plain pass over the coded arrays evaluation reads (question and item codes, ranks; the labels' codes and
    grades): each array read once and summed."""
    arrays = [run["qid"].cat.codes.to_numpy(), run["item_id"].cat.codes.to_numpy(), run["rank"].to_numpy(),
              qrels["qid"].cat.codes.to_numpy(), qrels["item_id"].cat.codes.to_numpy(), qrels["grade"].to_numpy()]
    return sum(int(a.sum(dtype=np.int64)) for a in arrays)


def pytrec_dicts(run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[dict, dict]:
    """The nested dicts pytrec_eval takes, built the fast way (one zip loop per frame)."""
    run_dict: dict[str, dict[str, float]] = {}
    for q, d, s in zip(run["qid"].tolist(), run["item_id"].tolist(), run["score"].tolist()):
        run_dict.setdefault(q, {})[d] = s
    qrels_dict: dict[str, dict[str, int]] = {}
    for q, d, g in zip(qrels["qid"].tolist(), qrels["item_id"].tolist(), qrels["grade"].tolist()):
        qrels_dict.setdefault(q, {})[d] = g
    return run_dict, qrels_dict


def ranx_frames(run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Qrels and run as ranx's from_df asserts them: ids of dtype object (pandas 3 infers its string dtype, which
    ranx refuses), grades int64, scores float64."""
    ids = {"qid": object, "item_id": object}
    return (qrels[["qid", "item_id", "grade"]].astype(ids | {"grade": np.int64}),
            run[["qid", "item_id", "score"]].astype(ids | {"score": np.float64}))


def read_dictionary_coded(run_path: str | Path, qrels_path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run and its labels read from Parquet as dictionary_coded gives them, without hashing a row where the files'
    pages are dictionary-encoded: id columns read as codes (Arrow's read_dictionary), only their dictionaries (the
    distinct ids) coded onto the shared vocabularies. The evaluate job's alternative, measured here and not adopted:
    slower than reading strings and coding them once (benchmarks/README.md, Metrics)."""
    run, run_ids = _read_with_codes(run_path, ("qid", "chunk_id", "doc_id"))
    qrels, qrels_ids = _read_with_codes(qrels_path, ("qid", "item_id"))
    questions = _shared_dictionaries([run_ids["qid"], qrels_ids["qid"]])
    items = _shared_dictionaries([run_ids["chunk_id"], run_ids["doc_id"], qrels_ids["item_id"]])
    coded = {"qid": questions[0], "chunk_id": items[0], "doc_id": items[1]}
    return (run.assign(**{c: pd.Series(v, index=run.index) for c, v in coded.items()}),
            qrels.assign(qid=pd.Series(questions[1], index=qrels.index),
                         item_id=pd.Series(items[2], index=qrels.index)))


def _read_with_codes(path: str | Path, ids: Sequence[str]) -> tuple[pd.DataFrame, dict[str, tuple[np.ndarray,
                                                                                                   pa.Array]]]:
    """A Parquet file's columns (the id columns as placeholders, in the file's order) and each id column's codes
    (-1: missing) with its dictionary."""
    names = pq.read_schema(path).names
    others = [n for n in names if n not in ids]
    frame = pd.read_parquet(path, columns=others)
    table = pq.read_table(path, columns=list(ids), read_dictionary=list(ids))
    codes = {name: _codes_and_dictionary(table.column(name)) for name in ids}
    return frame.assign(**{name: 0 for name in ids})[names], codes


def _codes_and_dictionary(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """A dictionary column's codes (-1: missing) over one dictionary: the reader's own when every chunk shares it,
    else the chunks' dictionaries unified (their values hashed, not the rows)."""
    chunks = column.chunks
    if not all(chunk.dictionary.equals(chunks[0].dictionary) for chunk in chunks[1:]):
        chunks = column.unify_dictionaries().chunks
    if not chunks:
        return np.zeros(0, dtype=np.int64), pa.array([], type=pa.large_string())
    codes = [chunk.indices.fill_null(-1).to_numpy().astype(np.int64) for chunk in chunks]
    return np.concatenate(codes), chunks[0].dictionary


def _shared_dictionaries(columns: Sequence[tuple[np.ndarray, pa.Array]]) -> list[pd.Categorical]:
    """Coded id columns (codes, dictionary) as categoricals of one shared dtype: the dictionaries concatenated and
    hashed by Arrow (distinct ids only), each column's codes remapped by an integer take."""
    values = pa.concat_arrays([dictionary.cast(pa.large_string()) for _, dictionary in columns])
    encoded = values.dictionary_encode()
    shared = encoded.indices.to_numpy().astype(np.int64)
    strings = encoded.dictionary.to_pandas(types_mapper={pa.large_string(): pd.StringDtype(na_value=np.nan)}.get)
    dtype = pd.CategoricalDtype(pd.Index(strings))
    bounds = np.cumsum([0] + [len(dictionary) for _, dictionary in columns])
    return [pd.Categorical.from_codes(np.append(shared[a:b], -1)[codes], dtype=dtype)  # -1 stays missing
            for a, b, (codes, _) in zip(bounds[:-1], bounds[1:], columns)]


def job_files(run: pd.DataFrame, qrels: pd.DataFrame, folder: Path) -> tuple[Path, Path, pd.DataFrame]:
    """The run and the labels (chunk grain, and document grain: a document's best label) written as the workflow
    writes them (write_parquet), and the questions the evaluate job reads beside them."""
    documents = "d" + (qrels["item_id"].str[1:].astype(np.int64) // 5 * 5).astype(str).str.zfill(6)
    document_qrels = (qrels.assign(item_id=documents).groupby(["qid", "item_id"], as_index=False, sort=True)["grade"]
                      .max())
    paths = folder / "run.parquet", folder / "qrels.parquet"
    write_parquet(run.rename(columns={"item_id": "chunk_id"})[RUN_COLUMNS], paths[0])
    write_parquet(pd.concat([document_qrels.assign(grain="document"), qrels.assign(grain="chunk")],
                            ignore_index=True)[QRELS_COLUMNS], paths[1])
    return *paths, pd.DataFrame({"qid": pd.unique(run["qid"]), "kind": "version"})


def evaluate_job(run: pd.DataFrame, qrels: pd.DataFrame, questions: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the workflow's evaluate job computes from its inputs: per-query metrics at both grains, grade shares."""
    return (evaluate_run(run, questions, qrels, KS), grade_distribution(run, questions, qrels, max(KS)))


def encodings(path: Path) -> str:
    """How the id columns of a Parquet file are stored (dictionary pages, or a fallback to plain ones)."""
    metadata = pq.ParquetFile(path).metadata
    columns = {metadata.schema.column(i).name: i for i in range(metadata.num_columns)}
    return ", ".join(f"{name}: {'/'.join(metadata.row_group(0).column(i).encodings)}" for name, i in columns.items()
                     if name in ("qid", "chunk_id", "doc_id", "item_id"))


def load_before(path: str) -> types.ModuleType:
    """Another version of rankbench/evaluation/metrics.py, imported from its file."""
    spec = importlib.util.spec_from_file_location("metrics_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def from_files(run: pd.DataFrame, qrels: pd.DataFrame, n_questions: int, repeats: int) -> None:
    """Time the evaluate job from Parquet files on the first n_questions: ids read as dictionary codes, read as strings
    and coded once (the job before), read and scored as strings; print the figures."""
    kept = pd.unique(run["qid"])[:n_questions]
    run, qrels = run[run["qid"].isin(kept)], qrels[qrels["qid"].isin(kept)]
    with tempfile.TemporaryDirectory() as folder:
        run_path, qrels_path, questions = job_files(run, qrels, Path(folder))
        print(f"files of {n_questions:,} questions: run {run_path.stat().st_size / 1e6:.2f} MB "
              f"({encodings(run_path)}), qrels {qrels_path.stat().st_size / 1e6:.2f} MB ({encodings(qrels_path)})")

        def strings() -> tuple[pd.DataFrame, pd.DataFrame]:
            return pd.read_parquet(run_path), pd.read_parquet(qrels_path)

        jobs = {
            "read_strings": strings,
            "read_codes": lambda: read_dictionary_coded(run_path, qrels_path),
            "job_strings": lambda: evaluate_job(*strings(), questions),
            "job_coded_once": lambda: evaluate_job(*dictionary_coded(*strings()), questions),
            "job_codes": lambda: evaluate_job(*read_dictionary_coded(run_path, qrels_path), questions),
        }
        f, results = alternated(jobs, repeats)
    for name in ("job_coded_once", "job_codes"):
        for ours_part, reference in zip(results[name], results["job_strings"]):
            pd.testing.assert_frame_equal(ours_part, reference)
    print(f"  the evaluate job from files (per-query metrics at both grains, grade shares): ids read as dictionary "
          f"codes {f['job_codes']:.4f} s; read as strings and coded once (the job before) {f['job_coded_once']:.4f} s; "
          f"read and scored as strings {f['job_strings']:.4f} s; reading alone: codes {f['read_codes']:.4f} s, "
          f"strings {f['read_strings']:.4f} s; strings / codes: {f['job_strings'] / f['job_codes']:.2f}x, coded "
          f"once / codes: {f['job_coded_once'] / f['job_codes']:.2f}x")


def main() -> None:
    """Time ours vs the references and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another version of rankbench/evaluation/metrics.py to time beside this one")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="rounds of calls (median)")
    args = parser.parse_args()
    repeats = args.repeats
    run, qrels = synthetic()
    print(f"data: {run['qid'].nunique():,} questions x {DEPTH} results = {len(run):,} run rows, "
          f"{len(qrels):,} labels; ks {KS}; median of {repeats} rounds, contenders alternated in each")

    every_metric = METRICS_AT_K + METRICS_FULL + POLLUTION_METRICS
    trec_metrics = ("precision", "recall", "ndcg", "ap", "hit", "rr", "r_precision")  # what TREC_MEASURES asks for
    coded_run, coded_qrels = coded(run, qrels)
    contenders: dict[str, Callable[[], object]] = {
        "strings": lambda: per_query_metrics(run, qrels, KS, metrics=every_metric),
        "strings_trec": lambda: per_query_metrics(run, qrels, KS, metrics=trec_metrics),
        "coded": lambda: per_query_metrics(coded_run, coded_qrels, KS, metrics=every_metric),
        "coded_trec": lambda: per_query_metrics(coded_run, coded_qrels, KS, metrics=trec_metrics),
        "coding": lambda: coded(run, qrels),
        "memory": lambda: memory_pass(coded_run, coded_qrels),
    }
    if args.before:
        before = load_before(args.before)
        contenders |= {
            "before": lambda: before.per_query_metrics(run, qrels, KS, metrics=every_metric),
            "before_trec": lambda: before.per_query_metrics(run, qrels, KS, metrics=trec_metrics),
            "before_coded": lambda: before.per_query_metrics(coded_run, coded_qrels, KS, metrics=every_metric),
        }
    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval not importable: skipped")
        pytrec_eval = None
    else:
        run_dict, qrels_dict = pytrec_dicts(run, qrels)
        contenders |= {
            "pytrec_build": lambda: pytrec_dicts(run, qrels),
            "pytrec_evaluate": lambda: pytrec_eval.RelevanceEvaluator(qrels_dict, TREC_MEASURES).evaluate(run_dict),
        }
    t, results = alternated(contenders, repeats)
    table = results["strings"]
    assert isinstance(table, pd.DataFrame)
    assert results["coded"].equals(table), "dictionary-coded ids must give the same table"
    assert results["coded_trec"].equals(results["strings_trec"])
    print(f"rankbench from string ids, all {table['metric'].nunique()} metrics: {t['strings']:.3f} s -> "
          f"{len(table):,} rows; pytrec_eval's {len(trec_metrics)} metrics: {t['strings_trec']:.3f} s")
    print(f"rankbench from dictionary-coded ids, all 13 metrics: {t['coded']:.3f} s; pytrec_eval's 7: "
          f"{t['coded_trec']:.3f} s (coding the string ids once: {t['coding']:.3f} s)")
    print(f"plain memory pass over the coded arrays: {t['memory']:.4f} s; rankbench from codes / memory pass: "
          f"{t['coded'] / t['memory']:.0f}x (all 13), {t['coded_trec'] / t['memory']:.0f}x (pytrec_eval's 7)")
    if args.before:
        assert results["before"].equals(table), "the version before must give the same table"
        print(f"before ({args.before}): all 13 metrics {t['before']:.3f} s from string ids, {t['before_coded']:.3f} s "
              f"from coded ids, pytrec_eval's 7 from string ids {t['before_trec']:.3f} s; after / before: "
              f"{t['strings'] / t['before']:.2f} (strings, 13), {t['strings_trec'] / t['before_trec']:.2f} "
              f"(strings, 7), {t['coded'] / t['before_coded']:.2f} (codes, 13)")
    if pytrec_eval is not None:
        build, evaluate_time = t["pytrec_build"], t["pytrec_evaluate"]
        total = build + evaluate_time
        print(f"pytrec_eval: dict building {build:.3f} s + evaluate {evaluate_time:.3f} s = {total:.3f} s")
        print(f"speed-up over pytrec_eval's total (its dicts built from the DataFrames + evaluate): "
              f"{total / t['strings']:.2f}x (all 13 metrics, string ids), {total / t['strings_trec']:.2f}x (its "
              f"metrics, string ids), {total / t['coded']:.2f}x (all 13, coded ids), {total / t['coded_trec']:.2f}x "
              f"(its metrics, coded ids)")
        print(f"speed-up over pytrec_eval's evaluate alone (dicts already built): {evaluate_time / t['strings']:.2f}x "
              f"(all 13, string ids), {evaluate_time / t['strings_trec']:.2f}x (its metrics, string ids), "
              f"{evaluate_time / t['coded']:.2f}x (all 13, coded ids), {evaluate_time / t['coded_trec']:.2f}x (its "
              f"metrics, coded ids)")

    for n_questions in (N_QUESTIONS, 300):  # all of it, and a SciFact-sized run whose id dictionaries fit a page
        from_files(run, qrels, n_questions, repeats)

    extra, extra_table = median_time(lambda: per_query_metrics(run, qrels, KS, metrics=EXTRA_METRICS_AT_K
                                                                + EXTRA_METRICS_FULL))
    print(f"rankbench, the {extra_table['metric'].nunique()} parity metrics computed on request (bpref, infAP, ERR, "
          f"RBP, ...): {extra:.3f} s -> {len(extra_table):,} rows")

    try:
        import ranx  # noqa: F401
    except ImportError:
        print("ranx not installed (it is no dependency of rankbench): skipped; `pip install ranx` to time it too "
              "(its first call in a process also pays numba compilation)")
    else:
        from ranx import Qrels, Run
        from ranx import evaluate as ranx_evaluate

        ranx_metrics = [f"{m}@{k}" for m in ("precision", "recall", "ndcg", "map", "hit_rate", "mrr") for k in KS]
        ranx_metrics.append("r-precision")

        ranx_qrels, ranx_run = ranx_frames(run, qrels)

        def ranx_build() -> tuple:
            return (Qrels.from_df(ranx_qrels, q_id_col="qid", doc_id_col="item_id", score_col="grade"),
                    Run.from_df(ranx_run, q_id_col="qid", doc_id_col="item_id", score_col="score"))

        start = time.perf_counter()
        r_qrels, r_run = ranx_build()
        ranx_evaluate(r_qrels, r_run, ranx_metrics, make_comparable=True)
        print(f"ranx first call (incl. numba compile): {time.perf_counter() - start:.3f} s")
        build, (r_qrels, r_run) = median_time(ranx_build)
        evaluate_time, _ = median_time(lambda: ranx_evaluate(r_qrels, r_run, ranx_metrics, make_comparable=True))
        total = build + evaluate_time
        print(f"ranx (warm): building {build:.3f} s + evaluate {evaluate_time:.3f} s = {total:.3f} s; "
              f"speed-up over ranx: {total / t['strings']:.2f}x (all 13, string ids), {total / t['coded']:.2f}x "
              f"(coded ids)")


if __name__ == "__main__":
    main()
