"""The comparison page of one question-set version: header with provenance, headline table with cost, findings,
full tables per grain and per kind, label findings and the exact config."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.evaluation import ALL_KINDS
from rankbench.findings import findings
from rankbench.tables import TABLE_METRICS, legend, markdown_grid, marked, metric_label, near_best, wide

DATE_PREFIX = "- date: "


def _cost_cells(cost: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    by_method = cost.set_index("method")
    frame = pd.DataFrame(index=pd.Index(list(methods), name="method"))
    frame["ms/question"] = [f"{by_method.loc[m, 'ms_per_question']:.1f}" if m in by_method.index
                            and pd.notna(by_method.loc[m, "ms_per_question"]) else "–" for m in methods]
    frame["index s"] = [f"{by_method.loc[m, 'index_s']:.1f}" if m in by_method.index
                        and pd.notna(by_method.loc[m, "index_s"]) else "–" for m in methods]
    return frame


def cost_markdown(cost: pd.DataFrame) -> str:
    """The cost table with what each row counts."""
    frame = cost.set_index("method")[["query_s", "ms_per_question", "index_s", "stages"]].copy()
    for column in ("query_s", "ms_per_question", "index_s"):
        frame[column] = frame[column].map(lambda v: "–" if pd.isna(v) else f"{v:.2f}")
    frame.columns = ["query-side s", "ms/question", "index-side s (once per corpus)", "stages counted"]
    return markdown_grid(frame)


def comparison_page(aggregate: pd.DataFrame, pairs: pd.DataFrame, questions: pd.DataFrame,
                    manifest: Mapping[str, Any], dataset: str, evaluation: Mapping[str, Any],
                    report: Mapping[str, Any], validation: str, unmapped: pd.DataFrame, cost: pd.DataFrame,
                    config_json: str, config_sha256: str, date: str, method_types: Mapping[str, str]) -> str:
    """The whole comparison page in Markdown; every number comes from the aggregate, pairs and benchmark files."""
    ks, grain, ci, alpha = evaluation["ks"], report["grain"], report["ci"], report["alpha"]
    headline = [tuple(item) for item in report["headline"]]
    table = marked(aggregate, alpha)
    methods = sorted(aggregate["method"].unique())
    evaluated = int(aggregate[(aggregate["kind"] == ALL_KINDS) & (aggregate["grain"] == "document")]["n"].max())
    experiment = json.loads(config_json).get("experiment", {})
    baseline = evaluation.get("baseline")
    lines = [
        f"# {dataset} — question-set version {manifest['version']}",
        "",
        f"- dataset: `{dataset}`; question-set version: `{manifest['version']}` (sha256 `{manifest['sha256']}`)",
        f"- questions: {len(questions)}; with a relevant label (evaluated): {evaluated}; "
        f"excluded (no relevant label, counted apart): {len(questions) - evaluated}",
        f"{DATE_PREFIX}{date}",
        f"- config: sha256 `{config_sha256}` (the exact config is at the end of this page)",
    ]
    if experiment:
        lines.append(f"- experiment: {experiment.get('label', '–')}" + (f" — {experiment['note']}"
                                                                       if experiment.get("note") else ""))
    lines += [
        f"- relevant when grade >= {evaluation['relevance_threshold']}; nDCG gain {evaluation['gain']}; "
        f"ranked lists of depth {evaluation['depth']}; questions missing from a run score 0 (trec_eval -c); "
        f"baseline: {baseline or 'none'}",
        "",
        f"## Headline ({grain} grain, all questions)",
        "",
        markdown_grid(wide(table, grain, ALL_KINDS, headline, ci, methods).join(_cost_cells(cost, methods))),
        "",
        legend(alpha, baseline) + " ms/question: query-side seconds of the method and its inputs per question "
        "(see Cost); index s: corpus-side seconds, paid once.",
        "",
    ]
    lines += [f"- {note}" for note in near_best(table, pairs, grain, ALL_KINDS, headline)]
    lines += ["", "## Findings", ""]
    lines += [f"- {sentence}" for sentence in findings(aggregate, pairs, grain, headline, method_types, alpha)]
    lines += ["", "## Cost", "", cost_markdown(cost), "",
              "Seconds are wall-clock times from the rules' benchmark files, summed over the method's own job and "
              "the jobs of its inputs (a stage shared by two methods counts in full for each). They include process "
              "start-up and model loading, so on a small question set they overstate the per-question cost.", ""]
    full = [(metric, k) for metric in TABLE_METRICS for k in ks]
    for g in (grain, *[g for g in ("document", "chunk") if g != grain]):
        if (table["grain"] == g).any():
            lines += [f"## All questions, {g} grain", "", markdown_grid(wide(table, g, ALL_KINDS, full, ci, methods)),
                      ""]
    kinds = sorted(set(aggregate["kind"]) - {ALL_KINDS})
    counts = questions["kind"].value_counts()
    for metric, k in headline:
        rows = table[(table["grain"] == grain) & (table["kind"] != ALL_KINDS)]
        frame = pd.DataFrame(index=pd.Index(methods, name="method"))
        for kind in kinds:
            n = int(rows[rows["kind"] == kind]["n"].max())
            frame[f"{kind} (n={n}/{counts.get(kind, n)})"] = wide(rows, grain, kind, [(metric, k)], ci,
                                                                  methods).iloc[:, 0]
        lines += [f"## Per question kind: {metric_label(metric, k)}, {grain} grain", "", markdown_grid(frame), ""]
    lines += ["## Labels", "", validation.replace("# Label validation", "### Label validation").strip(), ""]
    if not unmapped.empty:
        lines += [f"- **labels that map to no chunk**: {len(unmapped)} "
                  f"({', '.join(sorted(unmapped['qid'].unique()))})", ""]
    lines += ["## Config", "", "```json", json.dumps(json.loads(config_json), indent=2, ensure_ascii=False,
                                                     sort_keys=True), "```", ""]
    return "\n".join(lines)
