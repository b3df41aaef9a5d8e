"""The comparison page's chunking section: per method and its chunker, evidence recall and precision against the
prompt tokens the top k chunks cost, at evidence grain (evaluation.evidence), with the page's CIs and Holm marks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rankbench.evaluation.evidence import EVIDENCE_GRAIN, PROMPT_TOKENS
from rankbench.evaluation.marks import cell
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.io.markdown import markdown_grid
from rankbench.report.tables import legend, marked, method_grid

EVIDENCE_LABELS = {"evidence_recall": "ev-R", "evidence_precision": "ev-P", PROMPT_TOKENS: "tokens"}
ABSENT = ("Not shown: no label of this version carries evidence (a verbatim quote or character offsets, see "
          "docs/reference/data-formats.md), so nothing measures how much of the chunks is evidence; the chunkers "
          "are compared at chunk grain above (a chunk counts when it covers a labelled section or document).")


def _tokens(row: pd.Series, ci: bool) -> str:
    """Prompt tokens: a cost, not a quality (no bold, no marks), in whole tokens."""
    return f"{row['mean']:.0f}" + (f" [{row['ci_low']:.0f}, {row['ci_high']:.0f}]" if ci else "")


def chunking_section(evidence: pd.DataFrame, scored: Sequence[str], others: Sequence[str],
                     chunkers: Mapping[str, str], ks: Sequence[int], ci: bool, alpha: float, baseline: str | None,
                     tokenizer: str) -> list[str]:
    """Markdown lines of the section: `evidence` is evidence.parquet (the aggregate at evidence grain), `scored`
    the questions scored at evidence grain, `others` the evaluated questions that are not (a relevant label
    without evidence)."""
    lines = ["## Chunking: evidence grain", ""]
    if not len(evidence):
        return [*lines, ABSENT, ""]
    rows = evidence[(evidence["grain"] == EVIDENCE_GRAIN) & (evidence["kind"] == ALL_KINDS)]
    if not len(rows):
        return [*lines, ABSENT, ""]
    shown_ks = sorted(ks)[-2:]
    methods = sorted(rows["method"].unique(), key=lambda m: (chunkers.get(m, ""), m))
    table = marked(rows, alpha).set_index(["method", "metric", "k"])
    frame = pd.DataFrame({"chunker": [chunkers.get(m, "–") for m in methods]},
                         index=pd.Index(methods, name="method"))
    for k in shown_ks:
        for metric, label in EVIDENCE_LABELS.items():
            text = (lambda row: _tokens(row, ci)) if metric == PROMPT_TOKENS else (lambda row: cell(row, ci))
            frame[f"{label}@{k}"] = method_grid(table, [(metric, k)], methods, text).iloc[:, 0]
    lines += [f"{len(scored)} of the {len(scored) + len(others)} evaluated questions carry evidence on each relevant "
              "label and are scored here, whatever the chunker: ev-R@k is the share of their evidence characters "
              "inside the top k chunks (overlapping chunks counted once), ev-P@k the evidence characters over the "
              "characters "
              f"of the top k chunks, tokens@k the prompt tokens of those chunks' text, counted with {tokenizer}. "
              + (f"The other {len(others)} ({', '.join(others[:20])}{' ...' if len(others) > 20 else ''}) keep "
                 "the chunk and document grains' rules only." if others else
                 "Every evaluated question is scored so."), "",
              markdown_grid(frame), "", legend(alpha, baseline) + " Tokens are a cost: no best value or mark.", "",
              "A larger chunk wins ev-R by holding more text, and pays in ev-P and tokens: read the three together "
              "(`evidence.parquet` has every k, kind and the CIs).", ""]
    return lines
