"""From labels and runs to per-query metrics at chunk and document grain, and their tidy aggregate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rankbench.metrics import per_query_metrics
from rankbench.runs import collapse_to_documents
from rankbench.stats import bootstrap_ci

GRAINS = ("document", "chunk")
ALL_KINDS = "all"
QRELS_COLUMNS = ["grain", "qid", "item_id", "grade"]
PER_QUERY_COLUMNS = ["qid", "kind", "grain", "metric", "k", "value"]
AGGREGATE_COLUMNS = ["dataset", "qset", "method", "grain", "kind", "metric", "k", "mean", "ci_low", "ci_high",
                     "n", "n_excluded"]


def build_qrels(labels: pd.DataFrame, chunks: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judgements per grain: a document takes its best label; a chunk the best label of a section it covers.

    A label without a section applies to every chunk of its document. Labels that reach no chunk are returned
    apart, so the report can say which evidence the chunker lost.
    """
    documents = (labels.groupby(["qid", "doc_id"], as_index=False, sort=True)["grade"].max()
                 .rename(columns={"doc_id": "item_id"}).assign(grain="document"))
    chunk_sections = chunks[["chunk_id", "doc_id", "sections"]].explode("sections").rename(
        columns={"sections": "section"})
    labels = labels.reset_index(drop=True).rename_axis("label").reset_index()
    by_section = labels[labels["section"].notna()].merge(chunk_sections, on=["doc_id", "section"])
    by_document = labels[labels["section"].isna()].merge(chunk_sections[["chunk_id", "doc_id"]].drop_duplicates(),
                                                         on="doc_id")
    matched = pd.concat([by_section, by_document], ignore_index=True)
    chunk_qrels = (matched.groupby(["qid", "chunk_id"], as_index=False, sort=True)["grade"].max()
                   .rename(columns={"chunk_id": "item_id"}).assign(grain="chunk"))
    unmapped = labels[~labels["label"].isin(matched["label"])].drop(columns="label").reset_index(drop=True)
    return pd.concat([documents, chunk_qrels], ignore_index=True)[QRELS_COLUMNS], unmapped


def evaluate_run(run: pd.DataFrame, questions: pd.DataFrame, qrels: pd.DataFrame, ks: Sequence[int],
                 relevance_threshold: int = 1, gain: str = "linear") -> pd.DataFrame:
    """Per-query metrics of one run at both grains, with each question's kind; unanswerable questions left out."""
    grain_runs = {"chunk": run.rename(columns={"chunk_id": "item_id"}),
                  "document": collapse_to_documents(run).rename(columns={"doc_id": "item_id"})}
    frames = []
    for grain in GRAINS:
        grain_qrels = qrels.loc[qrels["grain"] == grain, ["qid", "item_id", "grade"]]
        values = per_query_metrics(grain_runs[grain][["qid", "item_id", "rank", "score"]], grain_qrels, ks,
                                   relevance_threshold=relevance_threshold, gain=gain)
        frames.append(values.assign(grain=grain))
    per_query = pd.concat(frames, ignore_index=True).merge(questions[["qid", "kind"]], on="qid", how="left")
    return per_query[PER_QUERY_COLUMNS]


def aggregate(per_query: Mapping[str, pd.DataFrame], questions: pd.DataFrame, dataset: str, qset: str,
              n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Mean and 95% bootstrap CI per (method, grain, kind incl. 'all', metric, k), with n and excluded counts."""
    kind_sizes = questions["kind"].value_counts().to_dict()
    kind_sizes[ALL_KINDS] = len(questions)
    rows = []
    for method in sorted(per_query):
        values = per_query[method]
        overall = values.assign(kind=ALL_KINDS)
        for (grain, kind), group in pd.concat([overall, values]).groupby(["grain", "kind"], sort=True):
            wide = group.pivot(index=["metric", "k"], columns="qid", values="value").sort_index()
            low, high = bootstrap_ci(wide.to_numpy(), n_resamples=n_resamples, seed=seed)
            n = wide.shape[1]
            for (metric, k), mean, lo, hi in zip(wide.index, wide.mean(axis=1), np.atleast_1d(low),
                                                 np.atleast_1d(high)):
                rows.append((dataset, qset, method, grain, kind, metric, int(k), float(mean), float(lo), float(hi),
                             n, kind_sizes.get(kind, 0) - n))
    return pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)
