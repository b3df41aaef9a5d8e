"""The failures page: per method, the questions it fails and how (from analysis/failures.py's table)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rankbench.analysis.failures import RANKING, RECALL
from rankbench.io.markdown import markdown_grid, markdown_literal
from rankbench.retrieval.registry import method_inputs

SHOWN_PER_METHOD = 20


def failures_markdown(failures: pd.DataFrame, specs: Mapping[str, Mapping[str, Any]], grain: str, k: int,
                      n_evaluated: int, qset: str, shown: int = SHOWN_PER_METHOD) -> str:
    """Per method: counts, the recall/ranking split of multi-stage methods, and one row per failing question (a
    question missing the top k also fails at rank 1: it is listed once), the first `shown` by id, the rest counted."""
    lines = [f"# Failure analysis: question-set version {qset}", "",
             f"At {grain} grain, over the {n_evaluated} questions with a relevant label. *rank 1*: the first result "
             f"is not relevant; *top {k}*: no relevant result in the top {k}; *first relevant at*: its rank at {grain} "
             f"grain. For a multi-stage method, a **{RECALL}** means no relevant result entered the candidates it "
             f"was given (rerank: the input's top depth; fusion: the input runs), a **{RANKING}** that one did but "
             f"was ranked too low. Both are decided in chunks, the unit a rerank's depth counts, and the inputs' "
             f"ranks of their first relevant chunk (at {grain} grain) are given in chunks too: a recall failure "
             f"of a rerank of depth 30 has every input's first relevant chunk beyond chunk 30. Each method lists its "
             f"first {shown} failing questions "
             "(those missing the top k, then those failing at rank 1 only, by id); `failures.parquet` has them all.",
             ""]
    for method in sorted(specs):
        rows = failures[failures["method"] == method]
        counts = rows["failure"].value_counts()
        head = f"## {method}: {counts.get('rank 1', 0)} fail at rank 1, {counts.get(f'top {k}', 0)} miss the top {k}"
        lines += [head, ""]
        if method_inputs(specs[method]):
            for failure in ("rank 1", f"top {k}"):
                split = rows[rows["failure"] == failure]["class"].value_counts()
                lines.append(f"- {failure}: {split.get(RECALL, 0)} recall failures, "
                             f"{split.get(RANKING, 0)} ranking failures (inputs: "
                             f"{', '.join(method_inputs(specs[method]))})")
            lines.append("")
        if rows.empty:
            lines += ["No failure.", ""]
            continue
        missed = rows[rows["failure"] == f"top {k}"]
        once = pd.concat([missed, rows[(rows["failure"] == "rank 1") & ~rows["qid"].isin(missed["qid"])]])
        table = once.head(shown)
        table = table.assign(rank=table["first_relevant_rank"].map(lambda r: "–" if pd.isna(r) else str(r)))
        columns = {"qid": "qid", "kind": "kind", "failure": "failure", "rank": "first relevant at",
                   "question": "question", "expected": "expected (grade)", "returned": "returned instead"}
        if failures["kind"].nunique() == 1:
            del columns["kind"]
        if method_inputs(specs[method]):
            columns.update({"class": "class", "input_ranks": "inputs' ranks"})
        frame = table[list(columns)].rename(columns=columns).map(markdown_literal).set_index("qid")
        lines += [markdown_grid(frame), ""]
        if len(once) > shown:
            rest = len(once) - shown
            lines += [f"… and {rest} more failing question{'s' if rest > 1 else ''} (`failures.parquet`).", ""]
    return "\n".join(lines)
