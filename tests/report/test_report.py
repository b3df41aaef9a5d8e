"""Report pieces on small hand-made inputs: table cells and marks, findings, cost, failures, calibration, diffs,
history and pooling; every expected value is worked out by hand."""

from __future__ import annotations

import html
import itertools
import json
import multiprocessing
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankbench.analysis.calibration import (
    separation,
    thresholds,
    top1_scores,
)
from rankbench.analysis.failures import (
    RANKING,
    RECALL,
    analyse,
    stage_log,
)
from rankbench.analysis.headline_history import history_frame, read_history, record_run
from rankbench.analysis.pooling import import_labels, read_filled, unjudged_pool, write_pool
from rankbench.analysis.qset_diff import (
    CHANGE_COLUMNS,
    diff_summary,
    flips,
    question_changes,
    version_metrics,
)
from rankbench.corpus.label_checks import label_findings
from rankbench.errors import InputError
from rankbench.evaluation.stats import format_p, holm, tiers
from rankbench.io.frozen import read_lock
from rankbench.io.markdown import markdown_grid, markdown_literal
from rankbench.records.cost import cost_table, method_stages
from rankbench.records.provenance import canonical_config, config_hash, report_settings
from rankbench.report.calibration import calibration_markdown
from rankbench.report.comparison import cost_page, judge_section, labels_section, leaks_section
from rankbench.report.failures import failures_markdown
from rankbench.report.findings import findings, kind_patterns
from rankbench.report.history import history_markdown
from rankbench.report.labels import findings_markdown
from rankbench.report.pages import markdown_html
from rankbench.report.plots import kind_heatmap, save
from rankbench.report.qset_diff import diff_markdown
from rankbench.report.tables import (
    csv_table,
    latex_table,
    marked,
    tier_grid,
    wide,
    with_tiers,
)


def aggregate_row(method, mean, diff=np.nan, p_holm=np.nan, below=None, kind="all", metric="ndcg", k=10, n=40):
    return {"dataset": "d", "qset": "v1", "method": method, "grain": "document", "kind": kind, "metric": metric,
            "k": k, "mean": mean, "ci_low": mean - 0.1, "ci_high": mean + 0.1, "n": n, "n_excluded": 0,
            "baseline": "bm25", "diff": diff, "diff_low": np.nan, "diff_high": np.nan, "p_randomization": p_holm,
            "p_t": p_holm, "p_holm": p_holm, "wins": pd.NA, "ties": pd.NA, "losses": pd.NA,
            "below_one_question": below}


def pair_row(a, b, mean_a, mean_b, p_holm, kind="all", metric="ndcg", k=10, n=40, wins=5, ties=30, losses=5):
    return {"dataset": "d", "qset": "v1", "grain": "document", "kind": kind, "metric": metric, "k": k,
            "method_a": a, "method_b": b, "mean_a": mean_a, "mean_b": mean_b, "diff": mean_a - mean_b,
            "diff_low": 0, "diff_high": 0, "p_randomization": p_holm, "p_t": p_holm, "p_holm": p_holm, "wins": wins,
            "ties": ties, "losses": losses, "n": n, "below_one_question": abs(mean_a - mean_b) < 1 / n,
            "is_baseline_pair": a == "bm25"}


@pytest.fixture
def tiny_aggregate() -> tuple[pd.DataFrame, pd.DataFrame]:
    aggregate = pd.DataFrame([
        aggregate_row("bm25", 0.60), aggregate_row("dense", 0.80, 0.20, 0.001, False),
        aggregate_row("hybrid", 0.61, 0.01, 0.9, True),
        aggregate_row("bm25", 1.00, kind="exact-code", n=8), aggregate_row("dense", 0.40, -0.6, 0.01, False,
                                                                           kind="exact-code", n=8),
        aggregate_row("hybrid", 0.90, -0.1, 0.5, False, kind="exact-code", n=8),
    ])
    pairs = pd.DataFrame([
        pair_row("bm25", "dense", 0.60, 0.80, 0.001), pair_row("bm25", "hybrid", 0.60, 0.61, 0.9),
        pair_row("dense", "hybrid", 0.80, 0.61, 0.003, wins=9, ties=28, losses=3),
        pair_row("bm25", "dense", 1.00, 0.40, 0.01, kind="exact-code", n=8),
        pair_row("bm25", "hybrid", 1.00, 0.90, 0.5, kind="exact-code", n=8),
        pair_row("dense", "hybrid", 0.40, 0.90, 0.04, kind="exact-code", n=8),
    ])
    return aggregate, pairs


def test_cells_carry_bold_best_significance_and_one_question_marks(tiny_aggregate) -> None:
    table = marked(tiny_aggregate[0], alpha=0.05)
    grid = wide(table, "document", "all", [("ndcg", 10)], ci=False, methods=["bm25", "dense", "hybrid"])
    assert grid["nDCG@10"].tolist() == ["0.600", "**0.800**↑", "0.610°"]
    with_ci = wide(table, "document", "all", [("ndcg", 10)], ci=True, methods=["dense"])
    assert with_ci.iloc[0, 0] == "**0.800** [0.700, 0.900]↑"
    per_kind = wide(table, "document", "exact-code", [("ndcg", 10)], ci=False, methods=["bm25", "dense"])
    assert per_kind.iloc[:, 0].tolist() == ["**1.000**", "0.400↓"]
    assert markdown_grid(grid).splitlines()[1] == "|---|---:|"


def test_latex_is_booktabs_with_bold_best_and_superscript_marks(tiny_aggregate) -> None:
    table = marked(tiny_aggregate[0], alpha=0.05)
    tex = latex_table(table, [("ndcg", 10)], ["document"], ["bm25", "dense", "hybrid"], False, "Legend ↑ ↓ °",
                      "tab:x", ["made by test"])
    assert tex.startswith("% made by test\n")
    for piece in (r"\toprule", r"\midrule", r"\bottomrule", r"dense & \textbf{0.800}$^{\uparrow}$ \\",
                  r"hybrid & 0.610$^{\circ}$ \\", r"\caption{Legend $\uparrow$ $\downarrow$ $^{\circ}$}"):
        assert piece in tex
    rows = pd.read_csv(__import__("io").StringIO(csv_table(table, [("ndcg", 10)], False)))
    dense = rows[(rows["method"] == "dense") & (rows["kind"] == "all")].iloc[0]
    assert dense["significant"] == "↑" and bool(dense["best"]) and dense["cell"] == "0.800↑"


def test_findings_name_the_best_method_its_significance_kind_patterns_and_noise(tiny_aggregate) -> None:
    aggregate, pairs = tiny_aggregate
    aggregate = pd.concat([aggregate, pd.DataFrame([aggregate_row(m, 0.7, kind="paraphrase", n=32)
                                                    for m in ("bm25", "dense", "hybrid")])], ignore_index=True)
    sentences = findings(aggregate, pairs, "document", [("ndcg", 10)], {"bm25": "bm25", "dense": "dense",
                                                                        "hybrid": "rrf"}, 0.05, 10000)
    assert sentences[0].startswith("On nDCG@10, dense (dense) is best with 0.800")
    assert ("lead of +0.190 over hybrid (0.610) is significant (Holm-corrected over the pairs with the best, "
            "p = 0.003, 9 questions won") in sentences[0]
    assert any(s.startswith("On exact-code questions, bm25 (lexical) beats dense (dense): nDCG@10 1.000 vs 0.400")
               for s in sentences)
    assert any(s.startswith("On exact-code questions, hybrid (fusion) beats dense (dense)") for s in sentences)
    assert not any("bm25 (lexical) beats hybrid" in s for s in sentences)  # p = 0.5
    assert sentences[-1].startswith("On nDCG@10, every other method is significantly behind dense")


@pytest.mark.slow
def test_findings_about_the_best_and_tier_a_use_one_family_and_cannot_disagree() -> None:
    """Five methods: a vs b has raw p = 0.01. Holm over the 4 pairs with a gives 0.04 (significant, b is tier b);
    over all 10 pairs it gives 0.1 (pairs' p_holm). The findings must say b is behind a, as the tier letters do;
    and on random p-values, the methods the findings cannot tell apart from the best are exactly tier a's."""
    means = {"a": 0.80, "b": 0.70, "c": 0.69, "d": 0.68, "e": 0.67}

    def case(raw: dict[frozenset[str], float]) -> tuple[list[str], dict[str, str]]:
        names = sorted(means)
        pairs = pd.DataFrame([pair_row(x, y, means[x], means[y], raw[frozenset((x, y))])
                              for i, x in enumerate(names) for y in names[i + 1:]])
        pairs["p_holm"] = holm(pairs["p_randomization"].to_numpy())  # what pairs.parquet stores: all pairs
        aggregate = pd.DataFrame([aggregate_row(m, v) for m, v in means.items()])
        return findings(aggregate, pairs, "document", [("ndcg", 10)], {}, 0.05, 10000), tiers(means, raw, 0.05)

    raw = {frozenset(pair): 0.5 for pair in itertools.combinations(means, 2)} | {frozenset("ab"): 0.01}
    sentences, letters = case(raw)
    assert letters == {"a": "a", "b": "b", "c": "a", "d": "a", "e": "a"}
    assert "lead of +0.100 over b (0.700) is significant (Holm-corrected over the pairs with the best, p = 0.040" \
        in sentences[0], sentences[0]
    assert "; b (Holm p = 0.040) is significantly behind it" in sentences[-1], sentences[-1]
    rng = np.random.default_rng(0)
    for _ in range(200):
        raw = {frozenset(pair): float(rng.choice([0.001, 0.01, 0.02, 0.04, 0.3])) for pair in
               itertools.combinations(means, 2)}
        sentences, letters = case(raw)
        told_apart = sentences[-1].split(" not shown different")[0] if "not shown different" in sentences[-1] else ""
        noise = {m for m in means if f"{m} (Holm" in told_apart}
        assert noise == {m for m in means if letters[m] == "a"} - {"a"}, (raw, sentences[-1], letters)
        assert ("is significant" in sentences[0]) == (letters["b"] != "a"), (raw, sentences[0], letters)


def test_p_values_at_the_resampling_floor_print_as_bounds(tiny_aggregate) -> None:
    """1,000 resamples: no sign flip as extreme gives p = 1/1001, which Holm doubles; neither is a measured value."""
    assert format_p(1 / 1001, 1 / 1001, 1000) == "< 0.001"
    assert format_p(2 / 1001, 1 / 1001, 1000) == "≤ 0.002"
    assert format_p(0.0123, 0.0123, 1000) == "0.012"
    assert format_p(1 / 11, 1 / 11, 10) == "≤ 0.091"  # the floor itself when it is above the printed precision
    aggregate, pairs = tiny_aggregate
    pairs = pairs.assign(p_randomization=pairs["p_randomization"].where(pairs["p_holm"] != 0.003, 1 / 1001),
                         p_holm=pairs["p_holm"].where(pairs["p_holm"] != 0.003, 3 / 1001))
    sentences = findings(aggregate, pairs, "document", [("ndcg", 10)], {}, 0.05, 1000)
    # Holm over the pairs with dense: 2 × 1/1001 (raw p of bm25 vs dense, 0.001, is the larger and stays)
    assert "is significant (Holm-corrected over the pairs with the best, p ≤ 0.002, 9 questions won" in sentences[0]


def test_findings_give_the_standardized_effect_of_the_lead_seen_from_the_best(tiny_aggregate) -> None:
    """d_z of the best method over the runner-up, with its CI, when the pairs row is stored the other way round."""
    aggregate, pairs = tiny_aggregate
    lead = (pairs["kind"] == "all") & (pairs["method_a"] == "dense") & (pairs["method_b"] == "hybrid")
    pairs = pairs.assign(d_z=np.nan, d_z_low=np.nan, d_z_high=np.nan)
    columns = ["method_a", "method_b", "mean_a", "mean_b", "diff", "wins", "losses", "d_z", "d_z_low", "d_z_high"]
    pairs.loc[lead, columns] = ["hybrid", "dense", 0.61, 0.80, -0.19, 3, 9, -0.8, -1.2, -0.4]
    sentence = findings(aggregate, pairs, "document", [("ndcg", 10)], {}, 0.05, 1000)[0]
    assert "standardized effect d_z = 0.80 (95% CI 0.40 to 1.20)" in sentence, sentence
    without = findings(aggregate, pairs.drop(columns=["d_z", "d_z_low", "d_z_high"]), "document", [("ndcg", 10)], {},
                       0.05, 1000)[0]
    assert "d_z" not in without


def test_tiers_show_as_letters_with_rank_intervals_on_the_page_and_superscripts_in_latex(tiny_aggregate) -> None:
    aggregate, _ = tiny_aggregate
    tiers = pd.DataFrame({"method": ["dense", "hybrid", "bm25"], "grain": "document", "kind": "all", "metric": "ndcg",
                          "k": 10, "mean": [0.8, 0.61, 0.6], "tier": ["a", "b", "b"],
                          "rank": pd.array([1, 2, 3], dtype="Int64"), "rank_low": pd.array([1, 2, 2], dtype="Int64"),
                          "rank_high": pd.array([1, 3, 3], dtype="Int64"), "n": 40})
    grid = tier_grid(tiers, "document", "all", [("ndcg", 10)], ["bm25", "dense", "hybrid", "other"])
    assert grid["nDCG@10"].tolist() == ["b · 3 (2–3)", "a · 1 (1–1)", "b · 2 (2–3)", "–"]
    table = with_tiers(marked(aggregate[aggregate["kind"] == "all"], 0.05), tiers)
    latex = latex_table(table, [("ndcg", 10)], ["document"], ["bm25", "dense", "hybrid"], False, "c", "l", [])
    rows = {line.split(" & ")[0]: line for line in latex.splitlines() if " & " in line}
    assert rows["dense"].startswith(r"dense & \textbf{0.800}") and rows["dense"].endswith(r"$^{\mathrm{a}}$ \\")
    assert rows["hybrid"].endswith(r"$^{\mathrm{b}}$ \\") and rows["bm25"].endswith(r"$^{\mathrm{b}}$ \\")


def test_cost_counts_a_method_and_its_inputs_once_each() -> None:
    methods = {"bm25": {"type": "bm25"}, "dense": {"type": "dense", "encoder": "e5"},
               "hybrid": {"type": "rrf", "inputs": ["bm25", "dense"]},
               "rr": {"type": "rerank", "input": "bm25", "scorer": {"kind": "bi-encoder", "encoder": "e5"}}}
    stages = method_stages(methods, "rr", lambda m: "sections", lambda m: "flat" if m == "dense" else m)
    assert [s[0] for s in stages] == ["embed_corpus", "embed_queries", "rerank", "bm25_index", "retrieve_bm25"]
    hybrid = method_stages(methods, "hybrid", lambda m: "sections", lambda m: "flat" if m == "dense" else m)
    assert ("faiss_index", "index", {"chunker": "sections", "encoder": "e5", "index": "flat"}) in hybrid
    assert {s[0] for s in hybrid} == {"fuse", "bm25_index", "retrieve_bm25", "embed_corpus", "faiss_index",
                                      "embed_queries", "retrieve_dense"}
    plan = {"rr": [["rerank", "query", "a"], ["retrieve_bm25", "query", "b"], ["bm25_index", "index", "c"]]}
    cost = cost_table(plan, {"a": 3.0, "b": 1.0, "c": 5.0}, n_questions=40).iloc[0]
    assert (cost["query_s"], cost["index_s"]) == (4.0, 5.0)
    assert np.isnan(cost[["p50_ms", "p95_ms", "onetime_s"]].astype(float)).all()  # no timing record: unknown
    assert cost["stages"] == "rerank, retrieve_bm25, bm25_index (index)"
    assert np.isnan(cost[["index_tokens", "query_tokens", "index_sent", "query_sent"]].astype(float)).all()


def test_cost_counts_the_tokens_an_embedding_api_billed_per_side(tiny_aggregate) -> None:
    plan = {"api": [["embed_queries", "query", "q"], ["retrieve_dense", "query", "r"], ["embed_corpus", "index", "c0"],
                    ["embed_corpus", "index", "c1"]],
            "quiet": [["embed_queries", "query", "q2"]], "bm25": [["retrieve_bm25", "query", "b"]]}
    usage = {"q": {"sent": 50, "tokens": 1130}, "c0": {"sent": 80, "tokens": 9000}, "c1": {"sent": 74, "tokens": 6583},
             "q2": {"sent": 8, "tokens": None}}
    cost = cost_table(plan, dict.fromkeys(["q", "r", "c0", "c1", "q2", "b"], 1.0), 50, usage).set_index("method")
    assert (cost.at["api", "query_tokens"], cost.at["api", "index_tokens"]) == (1130, 15583)
    assert (cost.at["api", "query_sent"], cost.at["api", "index_sent"]) == (50, 154)
    assert np.isnan(cost.at["quiet", "query_tokens"]) and cost.at["quiet", "query_sent"] == 8
    aggregate, _ = tiny_aggregate
    cost = cost.reset_index().replace({"api": "dense", "quiet": "hybrid"})
    page = cost_page(aggregate, cost, {"grain": "document", "headline": [["ndcg", 10]], "alpha": 0.05, "ci": False},
                     "demo", "v1")
    rows = {line.split(" | ")[0]: line for line in page.splitlines() if line.startswith("| ")}
    assert "| 1,130 | 15,583 |" in rows["| dense"] and "| ? (8 texts) | – |" in rows["| hybrid"]
    assert "| – | – |" in rows["| bm25"] and "API tokens: the tokens an embedding API billed" in page
    plain = cost_page(aggregate, cost_table({"bm25": plan["bm25"]}, {"b": 1.0}, 50), {"grain": "document",
                      "headline": [["ndcg", 10]], "alpha": 0.05, "ci": False}, "demo", "v1")
    assert "API tokens" not in plain


def test_cost_sums_a_questions_work_over_the_jobs_and_keeps_one_time_seconds_apart(tiny_aggregate) -> None:
    """p50/p95 of each question's work summed over a method's query-side jobs (numpy's percentiles of hand sums);
    the one-time seconds are the jobs' wall-clock seconds minus that work; LLM calls and tokens add up."""
    work = {f"q{i}": 0.001 * (i + 1) for i in range(20)}  # 1..20 ms in the first stage
    encode = {f"q{i}": 0.002 for i in range(15)}  # 2 ms each, 5 questions from the cache
    timings = {"r": {"questions": work, "once": {"load": 0.4}, "batched": False, "calls": 0, "tokens": 0},
               "e": {"questions": encode, "once": {}, "batched": True, "cached": 5, "calls": 0, "tokens": 0},
               "k": {"questions": work, "once": {}, "batched": False, "calls": 40, "tokens": 5000}}
    plan = {"dense": [["embed_queries", "query", "e"], ["retrieve_dense", "query", "r"]],
            "llm": [["rerank", "query", "k"], ["retrieve_bm25", "query", "r"]],
            "bm25": [["retrieve_bm25", "query", "b"]]}
    cost = cost_table(plan, {"e": 2.0, "r": 1.0, "k": 3.0, "b": 1.0}, 20, None, timings).set_index("method")
    sums = [work[q] + encode.get(q, 0.0) for q in work]
    assert cost.at["dense", "p50_ms"] == pytest.approx(1000 * np.percentile(sums, 50))
    assert cost.at["dense", "p95_ms"] == pytest.approx(1000 * np.percentile(sums, 95))
    assert cost.at["dense", "onetime_s"] == pytest.approx(3.0 - sum(sums)) and cost.at["dense", "batched"]
    assert (cost.at["llm", "calls"], cost.at["llm", "call_tokens"], cost.at["llm", "batched"]) == (40, 5000, False)
    assert np.isnan(cost.at["bm25", "p50_ms"])  # its job wrote no record
    aggregate, _ = tiny_aggregate
    page = cost_page(aggregate, cost.reset_index().replace({"llm": "hybrid"}), {"grain": "document", "headline":
                     [["ndcg", 10]], "alpha": 0.05, "ci": False}, "demo", "v1")
    rows = {line.split(" | ")[0]: line.split(" | ") for line in page.splitlines() if line.startswith("| ")}
    header = rows["| method"]
    dense = dict(zip(header, rows["| dense"]))
    # batched, 5 from the cache
    assert dense["workflow CPU ms/question p50"] == f"{1000 * np.percentile(sums, 50):.1f}*†"
    assert dict(zip(header, rows["| hybrid"]))["workflow CPU ms/question p50"].endswith(".0")  # neither
    assert dict(zip(header, rows["| hybrid"]))["LLM calls"] == "40" and "LLM calls: the requests" in page


def _run(rows):
    return pd.DataFrame(rows, columns=["qid", "rank", "chunk_id", "doc_id", "score"])


def test_failures_split_recall_and_ranking_failures_with_first_stage_ranks() -> None:
    # q1: relevant doc r1 is 3rd in bm25 (inside the rerank pool of depth 3) and the reranker puts it 3rd: ranking.
    # q2: relevant doc r2 is 4th in bm25, outside the pool of 3: recall failure. q3: found first everywhere.
    first = _run([("q1", 1, "a#x", "a", 9), ("q1", 2, "b#x", "b", 8), ("q1", 3, "r1#x", "r1", 7),
                  ("q2", 1, "a#x", "a", 9), ("q2", 2, "b#x", "b", 8), ("q2", 3, "c#x", "c", 7),
                  ("q2", 4, "r2#x", "r2", 6), ("q3", 1, "r3#x", "r3", 9)])
    rerank = _run([("q1", 1, "b#x", "b", 1), ("q1", 2, "a#x", "a", .9), ("q1", 3, "r1#x", "r1", .8),
                   ("q2", 1, "c#x", "c", 1), ("q2", 2, "a#x", "a", .9), ("q2", 3, "b#x", "b", .8),
                   ("q2", 4, "r2#x", "r2", 0), ("q3", 1, "r3#x", "r3", 1)])
    qrels = pd.DataFrame({"grain": "document", "qid": ["q1", "q2", "q3"], "item_id": ["r1", "r2", "r3"],
                          "grade": [3, 2, 1]})
    questions = pd.DataFrame({"qid": ["q1", "q2", "q3"], "question": ["one?", "two?", "three?"], "kind": "x"})
    labels = pd.DataFrame({"qid": ["q1", "q2", "q3"], "doc_id": ["r1", "r2", "r3"], "section": ["x", None, "x"],
                           "grade": [3, 2, 1]})
    specs = {"bm25": {"type": "bm25"}, "rr": {"type": "rerank", "input": "bm25", "depth": 3}}
    failures = analyse({"bm25": first, "rr": rerank}, specs, {"bm25": qrels, "rr": qrels}, questions, labels,
                       pd.Series({"a": "Doc A", "b": "Doc B"}), "document", k=2)
    rr = failures[failures["method"] == "rr"].set_index(["qid", "failure"])
    assert rr.loc[("q1", "top 2"), "class"] == RANKING and rr.loc[("q1", "top 2"), "input_ranks"] == "bm25: chunk 3"
    assert rr.loc[("q2", "top 2"), "class"] == RECALL and rr.loc[("q2", "top 2"), "input_ranks"] == "bm25: chunk 4"
    assert rr.loc[("q1", "rank 1"), "returned"] == "1. b — Doc B; 2. a — Doc A; 3. r1"  # no title: the id alone
    assert rr.loc[("q1", "rank 1"), "expected"] == "r1#x (3)" and rr.loc[("q2", "rank 1"), "expected"] == "r2 (2)"
    assert "q3" not in failures["qid"].tolist()
    assert set(failures[failures["method"] == "bm25"]["class"]) == {""}
    log = stage_log({"bm25": first, "rr": rerank}, specs, pd.Series(dtype="str"), k=2)
    assert log[(log["method"] == "rr") & (log["qid"] == "q2")][["stage", "chunk_id"]].values.tolist() == [
        ["bm25", "a#x"], ["bm25", "b#x"], ["rr", "c#x"], ["rr", "a#x"]]


def test_failures_page_is_capped_lists_a_question_once_and_sorts_numeric_ids_as_numbers() -> None:
    """BEIR-like: numeric ids, empty titles, 30 questions that all miss the top 1 (so fail at rank 1 too)."""
    qids = [str(q) for q in range(1, 31)]
    run = _run([(q, 1, "x#", "x", 1.0) for q in qids])
    qrels = pd.DataFrame({"grain": "document", "qid": qids, "item_id": "r", "grade": 1})
    questions = pd.DataFrame({"qid": qids, "question": "?", "kind": "beir"})
    labels = pd.DataFrame({"qid": qids, "doc_id": "r", "section": None, "grade": 1})
    specs = {"bm25": {"type": "bm25"}}
    failures = analyse({"bm25": run}, specs, {"bm25": qrels}, questions, labels, pd.Series({"x": ""}), "document", k=1)
    assert failures["qid"].tolist()[:11] == [str(q) for q in range(1, 12)]
    page = failures_markdown(failures, specs, "document", 1, 30, "test")
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| qid")]
    assert [row.split(" | ")[0][2:] for row in rows] == [str(q) for q in range(1, 21)]
    assert "… and 10 more failing questions" in page and "| beir |" not in page
    assert rows[0].endswith("| 1. x |")


def test_calibration_thresholds_count_shares_of_each_side() -> None:
    run = _run([("a1", 1, "x", "x", 0.9), ("a2", 1, "x", "x", 0.8), ("a3", 1, "x", "x", 0.3),
                ("u1", 1, "x", "x", 0.5)])  # u2 returned nothing
    questions = pd.DataFrame({"qid": ["a1", "a2", "a3", "u1", "u2"], "kind": "k"})
    top1 = top1_scores({"m": run}, questions, {"a1", "a2", "a3"})
    assert np.isnan(top1.set_index("qid").loc["u2", "score"])
    table = thresholds(top1).set_index("threshold")
    # every distinct score: 0.3, 0.5, 0.8, 0.9
    assert table.index.tolist() == pytest.approx([0.3, 0.5, 0.8, 0.9])
    assert table["answerable_below"].tolist() == pytest.approx([0, 1 / 3, 1 / 3, 2 / 3])
    assert table["unanswerable_above"].tolist() == pytest.approx([0.5, 0.5, 0.0, 0.0])
    assert table["errors"].tolist() == [1, 2, 1, 2]
    assert separation(top1).iloc[0]["auc"] == pytest.approx(5 / 6)  # 6 pairs; a3 (0.3) loses to u1 (0.5)


def _brute_force_errors(scores: np.ndarray, answerable: np.ndarray, threshold: float) -> int:
    """Errors of one threshold counted question by question (an empty result is below every threshold)."""
    return sum(1 for score, good in zip(scores, answerable)
               if (good and (np.isnan(score) or score < threshold))
               or (not good and not np.isnan(score) and score >= threshold))


@pytest.mark.parametrize("seed", range(6))
def test_calibration_tries_every_distinct_score_as_a_brute_force_search_would(seed: int) -> None:
    """On random scores with ties and empty results, the table has every distinct score, its counts equal a
    question-by-question count, and its fewest errors equal the best of any threshold at all (scores, midpoints
    and beyond both ends)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    scores = rng.integers(0, 12, n).astype(float) / 4  # ties
    scores[rng.random(n) < 0.1] = np.nan
    answerable = rng.random(n) < 0.6
    answerable[:2] = [True, False]
    top1 = pd.DataFrame({"method": "m", "qid": [f"q{i}" for i in range(n)], "kind": "k", "answerable": answerable,
                         "score": scores})
    table = thresholds(top1)
    distinct = np.unique(scores[~np.isnan(scores)])
    assert table["threshold"].tolist() == distinct.tolist()
    assert table["errors"].tolist() == [_brute_force_errors(scores, answerable, t) for t in distinct]
    assert table["answerable_below"].tolist() == pytest.approx(
        [np.mean([np.isnan(s) or s < t for s in scores[answerable]]) for t in distinct])
    candidates = np.concatenate([distinct, (distinct[1:] + distinct[:-1]) / 2, [distinct[0] - 1]])
    assert table["errors"].min() == min(_brute_force_errors(scores, answerable, t) for t in candidates)


def test_calibration_with_perfect_separation_finds_a_threshold_without_error() -> None:
    """AUC 1: some threshold makes no error (a decile grid could miss the gap between the two sides)."""
    answerable = np.array([True] * 19 + [False] * 3)
    scores = np.concatenate([np.linspace(0.50, 0.95, 19), [0.10, 0.48, 0.49]])
    top1 = pd.DataFrame({"method": "m", "qid": [f"q{i}" for i in range(22)], "kind": "k", "answerable": answerable,
                         "score": scores})
    assert separation(top1).iloc[0]["auc"] == 1.0
    table = thresholds(top1)
    assert table["errors"].min() == 0
    page = calibration_markdown(top1, table, "v")
    assert "Fewest errors: 0 of 22 questions, with a threshold of 0.5000." in page
    assert "| 0.5000 | 0% | 0% | **0** |" in page
    assert "[the plot](plots/calibration.svg)" in page
    assert page.count("\n| 0.") + page.count("\n| 1.") <= 11  # a page of rows, not one per score


def _per_query(values):
    return pd.DataFrame([{"qid": q, "kind": "k", "grain": "document", "metric": m, "k": k, "value": v}
                         for q, m, k, v in values])


def test_diff_reports_changes_metrics_on_common_questions_flips_and_rankings() -> None:
    qa = pd.DataFrame({"qid": ["q1", "q2", "q3"], "question": ["a", "b", "c"], "kind": "k", "audience": "public",
                       "as_of": "2025-01-01"})
    qb = pd.DataFrame({"qid": ["q1", "q2", "q4"], "question": ["a", "B!", "d"], "kind": "k", "audience": "public",
                       "as_of": "2025-01-01"})
    la = pd.DataFrame({"qid": ["q1", "q2", "q3"], "doc_id": ["d1", "d2", "d3"], "section": None, "grade": [3, 3, 3]})
    lb = pd.DataFrame({"qid": ["q1", "q2", "q4"], "doc_id": ["d9", "d2", "d4"], "section": None, "grade": [3, 3, 3]})
    changes = question_changes(qa, la, qb, lb)
    assert changes[["qid", "change"]].values.tolist() == [["q1", "labels"], ["q2", "text"], ["q3", "removed"],
                                                           ["q4", "added"]]
    assert changes.iloc[0]["before"] == "d1=3" and changes.iloc[0]["after"] == "d9=3"
    a = {"x": _per_query([("q1", "hit", 1, 1), ("q2", "hit", 1, 1), ("q3", "hit", 1, 1)]),
         "y": _per_query([("q1", "hit", 1, 0), ("q2", "hit", 1, 0), ("q3", "hit", 1, 1)])}
    b = {"x": _per_query([("q1", "hit", 1, 0), ("q2", "hit", 1, 1), ("q4", "hit", 1, 0)]),
         "y": _per_query([("q1", "hit", 1, 1), ("q2", "hit", 1, 1), ("q4", "hit", 1, 1)])}
    table = version_metrics(a, b, "document", [("hit", 1)]).set_index("method")
    assert table.loc["x", ["a_all", "b_all", "a_common", "b_common", "n_common"]].tolist() == [1, 1 / 3, 1, 0.5, 2]
    flipped = flips(a, b, "document", [1])
    assert flipped.values.tolist() == [["x", 1, "q1", "lost"], ["y", 1, "q1", "found"], ["y", 1, "q2", "found"]]
    summary = diff_summary(changes, version_metrics(a, b, "document", [("hit", 1)]), flipped,
                           {"version": "v1", "sha256": "a"}, {"version": "v2", "sha256": "b"}, [("hit", 1)])
    assert summary["changes"] == {"added": ["q4"], "labels": ["q1"], "removed": ["q3"], "text": ["q2"]}
    assert summary["flips"]["y"] == {"found@1": ["q1", "q2"], "lost@1": []}
    assert summary["rankings"]["a_all"] == ["x", "y"] and summary["rankings"]["b_all"] == ["y", "x"]
    assert summary["ranking_changed"] and summary["ranking_changed_on_common"]


def _recorded(path: str | Path, records: list[dict], date: str) -> int:
    """The records appended as the workflow's history job appends them (record_run, from a records file), the
    pages' drawing left out; how many were added."""
    handle, source = tempfile.mkstemp(suffix=".json", dir=Path(path).parent)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(records, out)
    return record_run([source], path, "d", "ndcg@10", date, lambda frame, metric: None)


def test_history_appends_only_records_that_changed(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    record = {"dataset": "d", "qset": "v1", "method": "bm25", "config_sha256": "c1", "metrics": {"ndcg@10": 0.5}}
    assert _recorded(path, [record], "day 1") == 1
    assert _recorded(path, [record], "day 2") == 0  # a rerun with the same config and numbers
    assert _recorded(path, [{**record, "config_sha256": "c2"}], "day 3") == 1
    assert _recorded(path, [record], "day 4") == 1  # back to the first config: a new run, recorded
    assert [(r["date"], r["run"], r["config_sha256"]) for r in read_history(path)] == [
        ("day 1", 1, "c1"), ("day 3", 2, "c2"), ("day 4", 3, "c1")]


def test_a_note_with_a_unicode_line_separator_reads_back(tmp_path) -> None:
    """Records are written as UTF-8 JSON lines (U+2028 unescaped): read_history split them at it (str.splitlines)
    and refused the file on every later run."""
    path = tmp_path / "history.jsonl"
    record = {"dataset": "d", "qset": "v1", "method": "bm25", "config_sha256": "c1", "metrics": {"ndcg@10": 0.5},
              "note": "first line\u2028second\x1cthird\x85"}
    assert _recorded(path, [record], "day 1") == 1
    assert _recorded(path, [{**record, "config_sha256": "c2"}], "day 2") == 1
    assert [r["note"] for r in read_history(path)] == [record["note"]] * 2


def test_canonical_config_ignores_key_order_and_report_settings_check_metrics() -> None:
    assert canonical_config({"b": 1, "a": [2, 1]}) == canonical_config({"a": [2, 1], "b": 1}) == '{"a":[2,1],"b":1}'
    assert config_hash('{"a":1}') == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    assert report_settings({}, [1, 5], "c")["headline"] == [["hit", 1]]
    with pytest.raises(InputError, match=r"report.headline.*not in evaluation.ks"):
        report_settings({"report": {"headline": ["ndcg@20"]}}, [1, 5], "c")
    with pytest.raises(InputError, match=r"report.plot_metric"):
        report_settings({"report": {"plot_metric": "bogus@3"}}, [3], "c")
    with pytest.raises(InputError, match=r"report.headline: names bpref, which is computed only on request"):
        report_settings({"report": {"headline": ["bpref", "ndcg@3"]}}, [3], "c")
    assert report_settings({"report": {"headline": ["bpref", "err@3"]}, "evaluation": {"metrics": ["bpref", "err"]}},
                           [3], "c")["headline"] == [["bpref", 0], ["err", 3]]


def test_pool_exports_unjudged_passages_and_import_makes_a_new_frozen_version(tmp_path) -> None:
    runs = {"m1": _run([("q1", 1, "d1#s1", "d1", 2), ("q1", 2, "d2#s1", "d2", 1)]),
            "m2": _run([("q1", 1, "d3#s1", "d3", 2), ("q1", 2, "d2#s1", "d2", 1)])}
    questions = pd.DataFrame({"qid": ["q1"], "question": ["Q?"]})
    qrels = pd.DataFrame({"grain": "chunk", "qid": ["q1"], "item_id": ["d1#s1"], "grade": [3]})
    chunks = pd.DataFrame({"chunk_id": ["d1#s1", "d2#s1", "d3#s1"], "doc_id": ["d1", "d2", "d3"],
                           "sections": [["s1"]] * 3, "title": ["T1", "T2", "T3"], "text": ["t1", "t2", "t3"]})
    frame = unjudged_pool(runs, questions, qrels, chunks, pool_depth=2)
    assert frame[["chunk_id", "methods", "best_rank"]].values.tolist() == [["d3#s1", "m2", 1], ["d2#s1", "m1, m2", 2]]
    filled_path = tmp_path / "pool.csv"
    write_pool(frame.assign(grade=["2", ""]), filled_path)
    source = tmp_path / "v1.jsonl"
    source.write_text(json.dumps({"qid": "q1", "question": "Q?", "labels": [{"doc_id": "d1", "section": "s1",
                                                                              "grade": 3}]}) + "\n")
    before = source.read_bytes()
    lock = tmp_path / "frozen.lock"
    added, digest = import_labels(read_filled(filled_path), source, tmp_path / "v2.jsonl", "v2", lock)
    assert added == 1 and source.read_bytes() == before and read_lock(lock) == {"v2": digest}
    labels = json.loads((tmp_path / "v2.jsonl").read_text())["labels"]
    assert labels == [{"doc_id": "d1", "section": "s1", "grade": 3}, {"doc_id": "d3", "section": "s1", "grade": 2}]
    with pytest.raises(InputError, match="already exists"):
        import_labels(read_filled(filled_path), source, tmp_path / "v2.jsonl", "v2", lock)
    write_pool(frame.assign(grade=["5", ""]), filled_path)
    with pytest.raises(InputError, match=r"line 2 \(question q1, d3\).*grade '5'"):
        read_filled(filled_path)


def test_a_filled_jsonl_pool_is_read_by_the_one_jsonl_reader(tmp_path) -> None:
    """Errors name the file's real line (a blank line counts) and a broken line is named, not a parser error."""
    filled = tmp_path / "pool.jsonl"
    rows = [{"qid": "q1", "doc_id": "d1", "section": "s1", "grade": 2}, {"qid": "q1", "doc_id": "d2", "section": "s1",
                                                                          "grade": 7}]
    filled.write_text(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    with pytest.raises(InputError, match=r"line 3 \(question q1, d2\).*grade '7'"):
        read_filled(filled)
    filled.write_text(json.dumps(rows[0]) + "\n{oops\n")
    with pytest.raises(InputError, match=r"pool.jsonl, line 2: is not a valid JSON object"):
        read_filled(filled)


def test_diff_pairs_must_name_two_configured_versions() -> None:
    from rankbench.records.provenance import diff_pairs

    config = {"qsets": {"v1": {}, "v2": {}}}
    assert diff_pairs({**config, "diffs": [["v1", "v2"]]}, "c") == [("v1", "v2")]
    with pytest.raises(InputError, match=r"diffs\[0\].*'v3' is not under `qsets`"):
        diff_pairs({**config, "diffs": [["v1", "v3"]]}, "c")


def test_a_versions_config_leaves_out_the_other_versions_and_the_diffs() -> None:
    from rankbench.records.provenance import qset_config

    config = {"qsets": {"v1": {"path": "a"}, "v2": {"path": "b"}}, "diffs": [["v1", "v2"]], "methods": {"m": 1}}
    assert qset_config(config, "v1") == {"qsets": {"v1": {"path": "a"}}, "methods": {"m": 1}}
    more = {**config, "qsets": {**config["qsets"], "v3": {"path": "c"}}}
    assert canonical_config(qset_config(more, "v1")) == canonical_config(qset_config(config, "v1"))


def test_judge_section_shows_the_agreement_or_says_how_to_measure_it() -> None:
    """The comparison page of a judged version: the kappa with its interval, or the command that measures it."""
    agreement = pd.DataFrame({"kind": ["all", "paraphrase"], "n": [27, 1], "exact": [0.593, 0.0],
                              "kappa_quadratic": [-0.072, 0.0], "kappa_quadratic_low": [-0.31, np.nan],
                              "kappa_quadratic_high": [0.28, np.nan]})
    lines = "\n".join(judge_section(agreement))
    assert "| all | 27 | 0.593 | -0.072 | -0.31 to 0.28 |" in lines
    assert "| paraphrase | 1 | 0.000 | 0.000 | – |" in lines
    assert "snakemake llm" in "\n".join(judge_section(None))


def test_diff_treats_missing_fields_as_equal_and_shows_them_empty() -> None:
    """BEIR questions have no as_of (None): two versions sharing a question must not differ on it."""
    qa = pd.DataFrame({"qid": ["1", "2"], "question": ["a", "b"], "kind": "beir", "audience": "public",
                       "as_of": None})
    qb = pd.concat([qa.assign(as_of=[None, "2025-01-01"]),
                    pd.DataFrame({"qid": ["10"], "question": ["c"], "kind": "beir", "audience": "public"})])
    labels = pd.DataFrame({"qid": ["1", "2"], "doc_id": ["d1", "d2"], "section": None, "grade": [1, 1]})
    changes = question_changes(qa, labels, qb, labels)
    assert changes.values.tolist() == [["2", "as_of", "", "2025-01-01"], ["10", "added", "", "c"]]  # 2 before 10


def _append_many(path: str, writer: int, count: int) -> None:
    for i in range(count):
        record = {"dataset": "d", "qset": "v1", "method": f"m{writer}-{i}", "config_sha256": "c",
                  "metrics": {"ndcg@10": i / count}}
        _recorded(path, [record], f"writer {writer}")


def test_concurrent_appends_lose_and_corrupt_no_record(tmp_path) -> None:
    """Runs of several configs share results/history.jsonl: real processes appending at once lose nothing."""
    path, writers, count = str(tmp_path / "history.jsonl"), 4, 25
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_append_many, args=(path, w, count)) for w in range(writers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    records = read_history(path)  # every line parses
    assert sorted(r["method"] for r in records) == sorted(f"m{w}-{i}" for w in range(writers) for i in range(count))
    assert sorted(r["run"] for r in records) == list(range(1, writers * count + 1))


def test_history_page_has_one_row_per_run_and_version() -> None:
    """Three runs of two versions and two methods: six rows, not the product of runs, dates, configs and labels."""
    records = [{"dataset": "d", "qset": qset, "qset_sha256": f"s-{qset}", "config_sha256": f"c{run}",
                "label": f"try {run}" if run != 2 else None, "note": None, "method": method, "grain": "document",
                "metrics": {"rr@10": run / 10}, "date": f"2026-01-0{run}", "run": run}
               for run in (1, 2, 3) for qset in ("v1", "v2") for method in ("bm25", "dense")]
    page = history_markdown(history_frame(records, "d"), "rr@10")
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| run")]
    assert len(rows) == 6
    assert rows[2].split(" | ")[1:] == ["2026-01-02", "v1", "s-v1", "c2", "", "", "0.200", "0.200 |"]


def test_history_page_marks_the_runs_of_a_draft_version() -> None:
    """Records of a draft version say so (`draft: true`, from run_records) and its rows are marked; older records,
    without the key, read as frozen. Before: nothing in the record or on the page told a draft apart."""
    from rankbench.analysis.headline_history import run_records

    aggregate = pd.DataFrame({"method": ["bm25"], "grain": "document", "kind": "all", "metric": "rr", "k": 10,
                              "mean": 0.5})
    made = [run_records(aggregate, {"version": "v2", "sha256": "s"}, "d", "c", {}, [("rr", 10)], "document",
                        draft=draft)[0] for draft in (True, False)]
    assert made[0]["draft"] is True and "draft" not in made[1]
    old = {"dataset": "d", "qset": "v1", "qset_sha256": "s", "config_sha256": "c", "label": None, "note": None,
           "method": "bm25", "grain": "document", "metrics": {"rr@10": 0.5}}
    records = [{**old, "date": "2026-01-01", "run": 1}, {**made[0], "date": "2026-01-02", "run": 2},
               {**made[1], "date": "2026-01-03", "run": 3}]
    page = history_markdown(history_frame(records, "d"), "rr@10")
    rows = [line.split(" | ")[2] for line in page.splitlines() if line.startswith("| ") and
            not line.startswith("| run")]
    assert rows == ["v1", "v2 (draft)", "v2"]
    assert "(draft): a draft version, not frozen" in page
    assert "draft" not in history_markdown(history_frame([records[0], records[2]], "d"), "rr@10")


def test_pages_say_not_applicable_for_what_the_data_lacks(tiny_aggregate) -> None:
    """BEIR-like data: no staff-only document, no as_of, one question kind, no unanswerable question."""
    leaks = pd.DataFrame([{"method": m, "leak": "staff", "k": k, "mean": 0.0, "n_with_leak": 0, "n_questions": 12}
                          for m in ("bm25", "dense") for k in (1, 10)])
    assert leaks_section(leaks, ["bm25", "dense"], staff_documents=0) == [
        "## Leaks", "", "Not applicable (no staff-only document, no question with an `as_of`).", ""]
    shown = "\n".join(leaks_section(leaks, ["bm25", "dense"], staff_documents=3))
    assert "| bm25 | 0/12 (0.00) | 0/12 (0.00) |" in shown and "Out of date: not applicable" in shown
    top1 = pd.DataFrame({"method": "bm25", "qid": ["1", "2"], "kind": "beir", "answerable": True, "score": [2.0, 1.0]})
    page = calibration_markdown(top1, thresholds(top1), "test")
    assert "Not applicable (no unanswerable question" in page and "nan%" not in page and "**" not in page
    aggregate, pairs = tiny_aggregate
    one_kind = aggregate[aggregate["kind"] == "all"]
    assert kind_patterns(one_kind, pairs, "document", [("ndcg", 10)], {}, 0.05, 1000) == []


def test_labels_section_never_says_no_findings_beside_a_lost_label() -> None:
    """validation.md now lists the labels each chunker loses, so the page shows it as it is (one source)."""
    labels = pd.DataFrame({"qid": ["q10", "q2"], "doc_id": ["d1", "d1"], "section": ["gone", "intro"], "grade": 2})
    documents = pd.DataFrame({"doc_id": ["d1"], "title": ["T"], "text": ["# Intro\nbody"], "audience": ["public"],
                              "valid_from": [None], "valid_to": [None]})
    chunks = pd.DataFrame({"chunk_id": ["d1#intro"], "doc_id": ["d1"], "sections": [["intro"]], "title": ["T"],
                           "text": ["Intro body"], "audience": ["public"], "valid_from": [None], "valid_to": [None]})
    questions = pd.DataFrame({"qid": ["q10", "q2"], "question": ["a", "b"], "kind": "k", "audience": "public",
                              "as_of": None})
    findings = label_findings(questions, labels.iloc[1:], documents, chunks={"sections": chunks.iloc[:0]})
    text = "\n".join(labels_section(findings_markdown(findings, "v1")))
    assert "No findings" not in text and "label maps to no chunk of chunker sections" in text, text


def test_diff_page_shows_tied_methods_as_equal_under_the_metric_label() -> None:
    same = _per_query([("1", "ndcg", 10, 0.5), ("2", "ndcg", 10, 1.0)])
    a = {"bm25": same, "bm25-rm3": same, "dense": _per_query([("1", "ndcg", 10, 0.1), ("2", "ndcg", 10, 0.2)])}
    table = version_metrics(a, a, "document", [("ndcg", 10)])
    changes, flipped = pd.DataFrame(columns=CHANGE_COLUMNS), flips(a, a, "document", [10])
    summary = diff_summary(changes, table, flipped, {"version": "v1", "sha256": "a"}, {"version": "v2", "sha256": "b"},
                           [("ndcg", 10)])
    page = diff_markdown(summary, changes, table, flipped, "document")
    assert "on nDCG@10 is the same on both versions: bm25 = bm25-rm3 > dense" in page


# User text a page may show (a note, a label, a kind, a question, a title), holding what Markdown and HTML would load.
HOSTILE = ["see ![chart](http://203.0.113.9/pixel.png)", "<img src=\"https://203.0.113.9/x.png\">",
           "[click](https://203.0.113.9/) <script src=//203.0.113.9/s.js></script>", "&lt;b&gt; a|b *em* `code`",
           "cost $5 and $\\frac{1}{2}$"]
# What would make a browser fetch: an element with a source, a stylesheet, a CSS url() or import.
REMOTE_LOAD = re.compile(r"<(img|script|iframe|link|source|video|audio|object|embed)\b|\burl\(|@import|srcset=",
                         re.IGNORECASE)


def visible_text(page: str) -> str:
    """The text a browser shows of an HTML fragment (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.mark.parametrize("text", HOSTILE)
def test_user_text_renders_as_that_text_and_loads_nothing(text: str) -> None:
    """Before: a Markdown image in `experiment.note` became a live <img src="http://…"> on comparison.html."""
    page = markdown_html(f"- experiment: {markdown_literal(text)}\n\n" + markdown_grid(pd.DataFrame(
        {"question": [markdown_literal(text)]}, index=pd.Index(["q1"], name="qid"))), "t")
    assert not REMOTE_LOAD.search(page), page
    body = page.split("<body>", 1)[1]
    assert visible_text(body).count(text) == 2, body


def test_pages_show_local_images_and_never_remote_ones() -> None:
    """The renderer's own net, whatever Markdown reaches it: the run's plots render, other images stay text."""
    page = markdown_html("![forest](plots/forest-ndcg@10.svg)\n\n![x](http://203.0.113.9/a.png) "
                         "![y](//203.0.113.9/b.png) ![z](/etc/c.png)", "t")
    assert page.count("<img") == 1 and '<img src="plots/forest-ndcg@10.svg" alt="forest"' in page
    assert "![x](http://203.0.113.9/a.png)" in visible_text(page)


def test_the_history_page_shows_labels_and_notes_as_text() -> None:
    records = [{"dataset": "d", "qset": "v1", "qset_sha256": "s", "config_sha256": "c", "label": HOSTILE[0],
                "note": HOSTILE[1], "method": "bm25", "grain": "document", "metrics": {"rr@10": 0.5},
                "date": "2026-01-01", "run": 1}]
    page = markdown_html(history_markdown(history_frame(records, "d"), "rr@10"), "history")
    assert not REMOTE_LOAD.search(page) and HOSTILE[0] in visible_text(page) and HOSTILE[1] in visible_text(page)


def test_plot_labels_are_literal_text_never_mathtext(tmp_path: Path) -> None:
    """A kind holding `$…$` (matplotlib would parse it as mathtext, and fail on `\\frac{`) is drawn as written."""
    rows = [aggregate_row(method, mean, kind=kind, metric="rr", k=10)
            for method, mean in (("bm25", 0.5), ("dense", 0.6)) for kind in ("all", "$\\frac{", "cost $5 $x$")]
    figure = kind_heatmap(pd.DataFrame(rows), "document", "rr", 10, "kinds of $\\frac{")
    save(figure, tmp_path / "k.png", tmp_path / "k.svg")
    texts = figure.axes[0].get_yticklabels() + figure.axes[0].get_xticklabels() + [figure.axes[0].title]
    assert {"$\\frac{\n(n=40)", "cost $5 $x$\n(n=40)"} <= {text.get_text() for text in texts}
    assert not any(text.get_parse_math() for text in texts)
