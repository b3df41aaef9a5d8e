"""The explorer's payload and page on a tiny hand-made question set (the browser tests are in test_explorer_browser)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
from explorer_helpers import SETTINGS, payload_args, tiny_inputs

from rankbench.evaluation.scoring import evaluate_run
from rankbench.report import explorer
from rankbench.report.explorer import (
    explorer_html,
    explorer_payload,
    metric_columns,
    shown_k,
)


def _embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match.group(1))


def test_results_carry_grades_leaks_failure_classes_and_first_relevant_ranks() -> None:
    payload = explorer_payload(*payload_args(tiny_inputs()))
    methods = {m["name"]: m for m in payload["methods"]}
    chunk_ids = payload["chunks"]["id"]
    bm25, dense, rerank = methods["bm25"], methods["dense"], methods["rerank"]
    assert payload["k"] == payload["kFull"] == 3
    # q1 in bm25: A#a2 (section not labelled: unjudged), A#a1 (grade 3), D#d1 (a label without section, grade 0).
    assert [chunk_ids[c] for c in bm25["c"][:3]] == ["A#a2", "A#a1", "D#d1"] and bm25["g"][:3] == [-1, 3, 0]
    assert bm25["n"] == [3, 3, 1, 2]
    # Document grain: A#a2 already brings document A (grade 3) at rank 1.
    assert bm25["first"] == [1, 3, None, 1] and bm25["firstChunk"] == [1, 3, None, 1]
    # q2 (public, 2025): B#b1 staff-only, C#c1 out of date; q4 is a staff question, so B#b1 is no leak there;
    # q1's B#b1 is at rank 4, past the largest k.
    assert bm25["lk"][3:6] == [explorer.STAFF, 0, explorer.OUTDATED]
    assert bm25["leak"] == [0, explorer.STAFF | explorer.OUTDATED, 0, 0]
    assert dense["fail"] == [0, 0, 0, explorer.RANK1 | explorer.TOPK]
    # rerank over bm25's top 2: q2's evidence C#c1 is bm25's 3rd (recall failure); q4's B#b1 was in the pool.
    assert rerank["fail"] == [0, explorer.RANK1 | explorer.TOPK | explorer.RECALL_BIT, 0,
                              explorer.RANK1 | explorer.RANKING_BIT]
    assert rerank["fs"] == [2, 1, 2, 1, 1, 2, 1] and "fs" not in bm25
    assert rerank["inputs"] == ["bm25"] and rerank["depth"] == 2
    assert payload["questions"]["answerable"] == [1, 1, 0, 1]
    assert payload["questions"]["labels"][0] == [["A", "a1", 3], ["D", "", 0]]
    assert payload["chunks"]["snippet"][chunk_ids.index("C#c1")] == "Gamma old text"
    assert payload["titles"] == {"A": "Doc A", "B": "Doc B", "C": "Doc C", "D": "Doc D"}


def test_only_the_titles_of_shown_or_labelled_documents_are_carried() -> None:
    inputs = tiny_inputs()
    extra = pd.DataFrame({"chunk_id": ["E#e1"], "doc_id": ["E"], "sections": [["e1"]], "title": ["Doc E"],
                          "text": ["never retrieved"], "audience": ["public"], "valid_from": [None],
                          "valid_to": [None]})
    inputs["chunks"] = {"sections": pd.concat([inputs["chunks"]["sections"], extra], ignore_index=True)}
    payload = explorer_payload(*payload_args(inputs))
    assert "E" not in payload["titles"] and "E#e1" not in payload["chunks"]["id"]


def test_metric_codes_decode_to_the_workflows_per_question_values_exactly() -> None:
    inputs = tiny_inputs()
    payload = explorer_payload(*payload_args(inputs))
    qids = payload["questions"]["qid"]
    for method in payload["methods"]:
        frame = inputs["metrics"][method["name"]]
        frame = frame[frame["grain"] == "document"].set_index(["metric", "k", "qid"])["value"]
        for j, metric in enumerate(payload["metrics"]):
            for q, code in enumerate(method["v"][j]):
                key = (metric["metric"], metric["k"], qids[q])
                if code < 0:
                    assert key not in frame.index
                else:
                    assert payload["values"][j][code] == frame[key]  # exact: wins and ties depend on it


def test_the_page_is_byte_identical_whatever_the_row_order_of_its_inputs() -> None:
    inputs = tiny_inputs()
    first = explorer_html(explorer_payload(*payload_args(inputs)))
    rng = np.random.default_rng(0)
    shuffle = lambda frame: frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)  # noqa: E731
    inputs["runs"] = {m: shuffle(run) for m, run in inputs["runs"].items()}
    inputs["metrics"] = {m: shuffle(frame) for m, frame in inputs["metrics"].items()}
    inputs["qrels"] = {c: shuffle(frame) for c, frame in inputs["qrels"].items()}
    inputs["labels"] = shuffle(inputs["labels"])
    assert explorer_html(explorer_payload(*payload_args(inputs))) == first


def test_text_from_the_data_cannot_close_the_script_that_carries_it() -> None:
    hostile = "</script><script>alert(1)</script><!-- & é"
    payload = explorer_payload(*payload_args(tiny_inputs(question_text=hostile)))
    page = explorer_html(payload)
    assert "alert(1)</script>" not in page and page.count("</script>") == 2
    assert _embedded(page) == json.loads(json.dumps(payload))
    assert _embedded(page)["questions"]["text"][0] == hostile


def test_large_versions_cut_the_top_k_the_metrics_and_the_snippets(monkeypatch) -> None:
    assert shown_k(300, 12, 10) == 10  # SciFact size: everything
    assert shown_k(10_000, 12, 10) == 3 and shown_k(10_000, 12, 2) == 2  # never below 3, never above k
    assert len(metric_columns(SETTINGS, 300, 12)) == 2 + 2 * 5 - 2  # headline + table columns, no repeats
    assert metric_columns(SETTINGS, 10**6, 12) == list(SETTINGS.headline)
    monkeypatch.setattr(explorer, "SNIPPET_BUDGET", 10)
    monkeypatch.setattr(explorer, "VALUE_BUDGET", 1)
    payload = explorer_payload(*payload_args(tiny_inputs()))
    assert payload["snippetChars"] == explorer.MIN_SNIPPET_CHARS
    assert [m["label"] for m in payload["metrics"]] == ["nDCG@3", "hit@1"]
    assert max(map(len, payload["chunks"]["snippet"])) <= explorer.MIN_SNIPPET_CHARS


def test_cell_links_name_the_cell_between_its_neighbours_in_the_row() -> None:
    payload = explorer_payload(*payload_args(tiny_inputs()))
    bm25 = next(m for m in payload["methods"] if m["name"] == "bm25")
    labels = [m["label"] for m in payload["metrics"]]
    # hit@1 opens the full table's row (prefix: the method), nDCG@3 closes it (no suffix).
    assert bm25["cell"][labels.index("hit@1")] == "comparison.html#:~:text=bm25-,0.667,-1.000"
    assert bm25["cell"][labels.index("nDCG@3")] == "comparison.html#:~:text=0.667-,0.833"
    assert bm25["mean"][labels.index("nDCG@3")] == "0.833"
    assert explorer._fragment("bm25-rm3, x") == "bm25%2Drm3%2C%20x"  # '-' and ',' would end a term


def test_an_external_run_of_documents_shows_their_titles_without_passages() -> None:
    inputs = tiny_inputs()
    run = pd.DataFrame({"qid": ["q1", "q1"], "rank": [1, 2], "chunk_id": ["D", "A"], "doc_id": ["D", "A"],
                        "score": [2.0, 1.0]})
    inputs["runs"]["ext"] = run
    inputs["specs"]["ext"] = {"type": "external", "path": "ext.trec", "format": "trec"}
    inputs["chunker_of"]["ext"] = "sections"
    inputs["metrics"]["ext"] = evaluate_run(run, inputs["questions"], inputs["qrels"]["sections"], SETTINGS.ks,
                                            grains=["document"])
    payload = explorer_payload(*payload_args(inputs))
    ext = next(m for m in payload["methods"] if m["name"] == "ext")
    table = payload["chunks"]
    shown = [(table["id"][c], table["doc"][c], table["section"][c], table["snippet"][c]) for c in ext["c"]]
    assert shown == [("D", "D", "", ""), ("A", "A", "", "")]
    assert ext["g"] == [-1, -1] and ext["first"][0] == 2  # document A (grade 3) is second
    assert ext["cell"] == [None] * len(payload["metrics"])  # not in the aggregate given: no cell to link
