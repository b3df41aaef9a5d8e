"""The Markdown comparison table of one question-set version, read from the tidy aggregate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.evaluation import ALL_KINDS

TABLE_METRICS = {"hit": "hit", "recall": "R", "precision": "P", "rr": "MRR", "ndcg": "nDCG"}
KIND_METRICS = (("ndcg", 10), ("hit", 5))


def metric_label(metric: str, k: int) -> str:
    """Column heading such as nDCG@10 (k = 0 means no cut-off)."""
    name = TABLE_METRICS.get(metric, metric)
    return f"{name}@{k}" if k else name


def markdown_table(frame: pd.DataFrame, higher_is_better: bool = True) -> str:
    """A pipe table of numbers with three decimals; the best value of each column in bold."""
    header = "| " + " | ".join([frame.index.name or ""] + [str(c) for c in frame.columns]) + " |"
    rule = "|" + "---|" + "---:|" * len(frame.columns)
    best = frame.max() if higher_is_better else frame.min()
    lines = [header, rule]
    for name, row in frame.iterrows():
        cells = []
        for column, value in row.items():
            if pd.isna(value):
                cells.append("–")
            else:
                text = f"{value:.3f}"
                cells.append(f"**{text}**" if value == best[column] and frame[column].notna().sum() > 1 else text)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def overall_table(aggregate: pd.DataFrame, grain: str, ks: Sequence[int]) -> pd.DataFrame:
    """Methods × metric@k over all questions at one grain."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS)
                     & aggregate["metric"].isin(list(TABLE_METRICS)) & aggregate["k"].isin(list(ks))]
    wide = rows.pivot(index="method", columns=["metric", "k"], values="mean")
    columns = [(metric, k) for metric in TABLE_METRICS for k in ks if (metric, k) in wide.columns]
    wide = wide[columns]
    wide.columns = [metric_label(metric, k) for metric, k in columns]
    wide.index.name = "method"
    return wide


def kind_table(aggregate: pd.DataFrame, grain: str, metric: str, k: int, kind_counts: Mapping[str, int]) -> pd.DataFrame:
    """Methods × question kind for one metric@k; headings carry the number of questions evaluated."""
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] != ALL_KINDS)
                     & (aggregate["metric"] == metric) & (aggregate["k"] == k)]
    wide = rows.pivot(index="method", columns="kind", values="mean")
    n = rows.groupby("kind")["n"].max()
    wide = wide[sorted(wide.columns)]
    wide.columns = [f"{kind} (n={n[kind]}/{kind_counts.get(kind, n[kind])})" for kind in wide.columns]
    wide.index.name = "method"
    return wide


def comparison_markdown(aggregate: pd.DataFrame, questions: pd.DataFrame, manifest: Mapping[str, Any],
                        dataset: str, ks: Sequence[int], settings: Mapping[str, Any], validation: str,
                        unmapped: pd.DataFrame) -> str:
    """The whole comparison page: header with versions and hash, overall and per-kind tables, label findings."""
    kind_counts = questions["kind"].value_counts().to_dict()
    evaluated = aggregate[(aggregate["kind"] == ALL_KINDS) & (aggregate["grain"] == "document")]["n"].max()
    excluded = len(questions) - int(evaluated)
    lines = [
        f"# {dataset} — question-set version {manifest['version']}",
        "",
        f"- dataset: `{dataset}`; question-set version: `{manifest['version']}` "
        f"(sha256 `{manifest['sha256']}`)",
        f"- questions: {len(questions)}; evaluated (with a relevant label): {evaluated}; "
        f"excluded (no relevant label, counted apart): {excluded}",
        f"- relevant when grade >= {settings['relevance_threshold']}; nDCG gain {settings['gain']}; "
        "ranked lists of depth {depth}; questions missing from a run score 0 (trec_eval -c)".format(**settings),
        "",
    ]
    for grain in ("document", "chunk"):
        lines += [f"## All questions, {grain} grain", "", markdown_table(overall_table(aggregate, grain, ks)), ""]
    for metric, k in KIND_METRICS:
        if k in ks:
            lines += [f"## Per question kind: {metric_label(metric, k)}, document grain", "",
                      markdown_table(kind_table(aggregate, "document", metric, k, kind_counts)), ""]
    lines += ["## Labels", "", validation.replace("# Label validation", "### Label validation").strip(), ""]
    if not unmapped.empty:
        lines += [f"- **labels that map to no chunk**: {len(unmapped)} "
                  f"({', '.join(sorted(unmapped['qid'].unique()))})", ""]
    return "\n".join(lines)
