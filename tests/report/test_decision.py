"""The verdict and "What to do": each rule appears exactly when its pattern is measured (families from the registry,
not from names), with its evidence; a rule that does not apply is not shown."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.analysis.decision import advice, verdict
from rankbench.evaluation.scoring import summarize
from rankbench.pipeline.defaults import DECISION_DEFAULTS
from rankbench.report.decision import decision_lines

N = 80
RNG = np.random.default_rng(7)
BASE = RNG.uniform(0.3, 0.9, N)
NOISE = np.tile([0.03, -0.03, 0.08, -0.08], N // 4)
# Names that say nothing: the roles come from the types (registry families), never from the names.
TYPES = {"m1": "bm25", "m2": "dense", "m3": "rrf", "m4": "rerank"}
INPUTS = {"m3": ["m1", "m2"], "m4": ["m2"]}


def _tables(values: dict[str, np.ndarray], margin: float | None = 0.05) -> tuple[pd.DataFrame, pd.DataFrame]:
    long = pd.concat([pd.DataFrame({"method": m, "qid": [f"q{i}" for i in range(N)], "metric": "ndcg", "k": 10,
                                    "value": np.clip(v, 0, 1), "grain": "document", "kind": "all"})
                      for m, v in values.items()], ignore_index=True)
    summary, pairs = summarize(long, ["grain", "kind"], None, n_resamples=2000,
                               margins={("ndcg", 10): margin} if margin else None)
    return summary, pairs


def _rules(values: dict[str, np.ndarray], margin: float | None = 0.05, **settings) -> list[str]:
    summary, pairs = _tables(values, margin)
    return [a.rule for a in advice(summary, pairs, "document", "ndcg", 10, 0.05, TYPES, INPUTS,
                                   {**DECISION_DEFAULTS, **settings})]


def test_hybrid_clearly_above_dense_and_lexical_above_dense() -> None:
    rules = _rules({"m1": BASE - 0.05 + NOISE, "m2": BASE - 0.2 + NOISE, "m3": BASE + NOISE, "m4": BASE - 0.19})
    assert "hybrid_above_dense" in rules and "lexical_above_dense" in rules
    assert "dense_close_to_hybrid" not in rules and "reranker_gains" not in rules and "low_scores" not in rules


def test_dense_close_to_hybrid_needs_a_margin_and_the_reranker_rule_its_gain() -> None:
    values = {"m1": BASE - 0.3, "m2": BASE - 0.005 + NOISE, "m3": BASE, "m4": BASE + 0.1 + NOISE / 2}
    rules = _rules(values)
    assert "dense_close_to_hybrid" in rules and "hybrid_above_dense" not in rules
    assert "reranker_gains" in rules and "lexical_above_dense" not in rules
    assert _rules(values, margin=None)[0] == "needs_margin"  # not shown different is not "≈": the page says why
    assert "reranker_gains" not in _rules(values, rerank_gain=0.2)


def test_low_scores_and_wide_intervals() -> None:
    low = {m: BASE / 5 + NOISE / 10 for m in TYPES}
    assert "low_scores" in _rules(low)
    noisy = {"m1": BASE, "m2": BASE - 0.01 + 4 * NOISE, "m3": BASE - 0.3, "m4": BASE - 0.3}
    assert _rules(noisy) == ["wide_intervals"]
    assert "wide_intervals" not in _rules({**noisy, "m2": BASE - 0.01 + NOISE})  # the runner-up shown within δ
    summary, pairs = _tables(noisy)
    answer = verdict(summary, pairs, "document", "ndcg", 10, 0.05)
    assert answer.best == "m1" and answer.tied == ["m2"] and answer.needed > N


def test_the_page_sections_state_the_evidence_and_the_budget() -> None:
    summary, pairs = _tables({"m1": BASE - 0.3, "m2": BASE - 0.1, "m3": BASE - 0.09, "m4": BASE + NOISE / 2})
    lines = "\n".join(decision_lines(summary, pairs, "document", [("ndcg", 10)], 0.05, TYPES, INPUTS,
                                     {**DECISION_DEFAULTS, "latency_budget_ms": 50.0},
                                     cost={"m4": {"p50_ms": 30.0, "p95_ms": 80.0}}))
    assert lines.startswith("## The answer (nDCG@10, document grain, all questions)\n\n**m4** has the highest")
    assert "clearly ahead of every other method" in lines
    rerank = next(line for line in lines.splitlines() if "reranker gains a lot" in line)
    assert "m4 over its first stage m2, Δ +0.1" in rerank and "Holm p" in rerank and "W/T/L" in rerank
    assert "30.0 ms/question p50, 80.0 p95 — over `decision.latency_budget_ms` 50" in rerank
