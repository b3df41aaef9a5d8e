"""Benchmark every rankbench metric (per_query_metrics with the pollution metrics) against pytrec_eval (and ranx
if installed).

Run: .venv/bin/python benchmarks/bench_metrics.py [--before OLD_METRICS_PY]
Deterministic synthetic data: 10,000 questions x 100 results, graded labels 0..3.
Reports the median of 3 repetitions of CPU time (user + sys of this process: everything timed runs on one thread,
so other jobs on a shared machine inflate it far less than wall time); no assertions on time.
Ours is timed from string DataFrames and from dictionary-coded ones (ids as categoricals over one vocabulary per
id kind, as the workflow's evaluate job codes them once), on pytrec_eval's own metrics and on all 13, and against
a plain memory pass over the coded arrays (each read once, summed). `--before FILE` also times another version of
rankbench/evaluation/metrics.py on the same data in the same process (e.g. `git show
<commit>:src/rankbench/evaluation/metrics.py > /tmp/metrics_before.py`), for before/after figures side by side.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from rankbench.evaluation.metrics import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
    per_query_metrics,
)
from rankbench.evaluation.scoring import dictionary_coded

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


def median_time(fn: Callable[[], object]) -> tuple[float, object]:
    """Median CPU time (user + sys) of REPEATS calls and the last result."""
    times, result = [], None
    for _ in range(REPEATS):
        start = time.process_time()
        result = fn()
        times.append(time.process_time() - start)
    return statistics.median(times), result


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


def main() -> None:
    """Time ours vs the references and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another version of rankbench/evaluation/metrics.py to time beside this one")
    args = parser.parse_args()
    run, qrels = synthetic()
    print(f"data: {run['qid'].nunique():,} questions x {DEPTH} results = {len(run):,} run rows, "
          f"{len(qrels):,} labels; ks {KS}; median of {REPEATS}")

    every_metric = METRICS_AT_K + METRICS_FULL + POLLUTION_METRICS
    trec_metrics = ("precision", "recall", "ndcg", "ap", "hit", "rr", "r_precision")  # what TREC_MEASURES asks for
    ours, table = median_time(lambda: per_query_metrics(run, qrels, KS, metrics=every_metric))
    print(f"rankbench from string ids, all {table['metric'].nunique()} metrics: {ours:.3f} s -> {len(table):,} rows")
    ours_trec, _ = median_time(lambda: per_query_metrics(run, qrels, KS, metrics=trec_metrics))
    print(f"rankbench from string ids, pytrec_eval's {len(trec_metrics)} metrics: {ours_trec:.3f} s")
    coding, (coded_run, coded_qrels) = median_time(lambda: coded(run, qrels))
    ours_coded, coded_table = median_time(lambda: per_query_metrics(coded_run, coded_qrels, KS, metrics=every_metric))
    assert coded_table.equals(table), "dictionary-coded ids must give the same table"
    print(f"rankbench from dictionary-coded ids, all 13 metrics: {ours_coded:.3f} s "
          f"(coding the string ids once: {coding:.3f} s)")
    floor, _ = median_time(lambda: memory_pass(coded_run, coded_qrels))
    print(f"plain memory pass over the coded arrays: {floor:.4f} s; rankbench from codes / memory pass: "
          f"{ours_coded / floor:.0f}x")
    if args.before:
        spec = importlib.util.spec_from_file_location("metrics_before", args.before)
        assert spec is not None and spec.loader is not None
        before = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before)
        old, old_table = median_time(lambda: before.per_query_metrics(run, qrels, KS, metrics=every_metric))
        assert old_table.equals(table), "the version before must give the same table"
        old_coded, _ = median_time(lambda: before.per_query_metrics(coded_run, coded_qrels, KS, metrics=every_metric))
        print(f"before ({args.before}), all 13 metrics: {old:.3f} s from string ids, {old_coded:.3f} s from "
              f"categorical ids; after / before: {ours / old:.2f} (strings), {ours_coded / old_coded:.2f} (codes)")
    extra, extra_table = median_time(lambda: per_query_metrics(run, qrels, KS, metrics=EXTRA_METRICS_AT_K
                                                                + EXTRA_METRICS_FULL))
    print(f"rankbench, the {extra_table['metric'].nunique()} parity metrics computed on request (bpref, infAP, ERR, "
          f"RBP, ...): {extra:.3f} s -> {len(extra_table):,} rows")

    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval not importable: skipped")
    else:
        build, (run_dict, qrels_dict) = median_time(lambda: pytrec_dicts(run, qrels))

        def evaluate() -> dict:
            return pytrec_eval.RelevanceEvaluator(qrels_dict, TREC_MEASURES).evaluate(run_dict)

        evaluate_time, _ = median_time(evaluate)
        total = build + evaluate_time
        print(f"pytrec_eval: dict building {build:.3f} s + evaluate {evaluate_time:.3f} s = {total:.3f} s")
        print(f"speed-up over pytrec_eval's total (its dicts built from the DataFrames + evaluate): "
              f"{total / ours:.2f}x (all 13 metrics, string ids), {total / ours_trec:.2f}x (its metrics, string "
              f"ids), {total / ours_coded:.2f}x (all 13, coded ids)")
        print(f"speed-up over pytrec_eval's evaluate alone (dicts already built): {evaluate_time / ours:.2f}x (all 13, "
              f"string ids), {evaluate_time / ours_trec:.2f}x (its metrics, string ids), "
              f"{evaluate_time / ours_coded:.2f}x (all 13, coded ids)")

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
              f"speed-up over ranx: {total / ours:.2f}x (all 13, string ids), {total / ours_coded:.2f}x (coded ids)")


if __name__ == "__main__":
    main()
