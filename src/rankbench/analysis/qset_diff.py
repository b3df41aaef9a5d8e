"""Diff of two question-set versions: questions added, removed or changed (text, fields, labels), every method's
metrics on each version and on the questions common to both, questions found or lost per method, and whether the
ranking of methods changed. Changing the question set between two comparisons must not go unnoticed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.io.markdown import natural_key, natural_order

CHANGE_COLUMNS = ["qid", "change", "before", "after"]
FIELDS = ("question", "kind", "audience", "as_of")


def _text(values: pd.Series) -> pd.Series:
    """Values as text with missing ones (None, NaN) as "": astype(str) turns None into NaN, and NaN != NaN."""
    return values.map(lambda v: "" if pd.isna(v) else str(v))


def labels_text(labels: pd.DataFrame) -> pd.Series:
    """Each question's labels as one canonical line (`doc#section=grade, ...`, sorted), by qid."""
    rows = labels.sort_values(["qid", "doc_id", "section", "grade"], na_position="first")
    text = rows["doc_id"] + rows["section"].map(lambda s: f"#{s}" if isinstance(s, str) and s else "") \
        + "=" + rows["grade"].astype(str)
    return text.groupby(rows["qid"]).agg(", ".join)


def question_changes(questions_a: pd.DataFrame, labels_a: pd.DataFrame, questions_b: pd.DataFrame,
                     labels_b: pd.DataFrame) -> pd.DataFrame:
    """One row per change: added / removed question, a changed field (question text, kind, …), changed labels."""
    a, b = questions_a.set_index("qid"), questions_b.set_index("qid")
    rows = [{"qid": q, "change": "added", "before": "", "after": b.loc[q, "question"]}
            for q in b.index.difference(a.index)]
    rows += [{"qid": q, "change": "removed", "before": a.loc[q, "question"], "after": ""}
             for q in a.index.difference(b.index)]
    common = a.index.intersection(b.index)
    for field in FIELDS:
        before, after = _text(a.loc[common, field]), _text(b.loc[common, field])
        changed = common[(before != after).to_numpy()]
        rows += [{"qid": q, "change": "text" if field == "question" else field, "before": before[q],
                  "after": after[q]} for q in changed]
    la, lb = labels_text(labels_a).reindex(common).fillna(""), labels_text(labels_b).reindex(common).fillna("")
    rows += [{"qid": q, "change": "labels", "before": la[q], "after": lb[q]} for q in common[(la != lb).to_numpy()]]
    return pd.DataFrame(rows, columns=CHANGE_COLUMNS).sort_values(["qid", "change"], key=natural_order,
                                                                   ignore_index=True)


def _values(per_query: pd.DataFrame, grain: str, metric: str, k: int) -> pd.Series:
    rows = per_query[(per_query["grain"] == grain) & (per_query["metric"] == metric) & (per_query["k"] == k)]
    return rows.set_index("qid")["value"]


def version_metrics(metrics_a: Mapping[str, pd.DataFrame], metrics_b: Mapping[str, pd.DataFrame], grain: str,
                    headline: Sequence[tuple[str, int]]) -> pd.DataFrame:
    """Per method and metric: the mean on each whole version and on the questions both evaluate (same qid)."""
    rows = []
    for method in sorted(set(metrics_a) & set(metrics_b)):
        for metric, k in headline:
            a, b = _values(metrics_a[method], grain, metric, k), _values(metrics_b[method], grain, metric, k)
            common = a.index.intersection(b.index)
            rows.append({"method": method, "metric": metric, "k": k, "a_all": a.mean(), "b_all": b.mean(),
                         "n_a": len(a), "n_b": len(b), "a_common": a[common].mean(), "b_common": b[common].mean(),
                         "n_common": len(common)})
    return pd.DataFrame(rows)


def flips(metrics_a: Mapping[str, pd.DataFrame], metrics_b: Mapping[str, pd.DataFrame], grain: str,
          ks: Sequence[int]) -> pd.DataFrame:
    """Per method and k, the common questions whose evidence is in the top k in one version and not the other."""
    rows = []
    for method in sorted(set(metrics_a) & set(metrics_b)):
        for k in ks:
            a, b = _values(metrics_a[method], grain, "hit", k), _values(metrics_b[method], grain, "hit", k)
            common = a.index.intersection(b.index)
            for qid in common[(a[common] != b[common]).to_numpy()]:
                rows.append({"method": method, "k": k, "qid": qid, "flip": "found" if b[qid] > a[qid] else "lost"})
    return pd.DataFrame(rows, columns=["method", "k", "qid", "flip"])


def rankings(table: pd.DataFrame, metric: str, k: int) -> dict[str, list[str]]:
    """Methods ordered best first on each version and on the common questions (ties by name)."""
    rows = table[(table["metric"] == metric) & (table["k"] == k)]
    return {column: rows.sort_values([column, "method"], ascending=[False, True])["method"].tolist()
            for column in ("a_all", "b_all", "a_common", "b_common")}


def diff_summary(changes: pd.DataFrame, table: pd.DataFrame, flipped: pd.DataFrame, a: Mapping[str, Any],
                 b: Mapping[str, Any], headline: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """The diff as plain values: ids per change, flips per method, rankings and whether they changed."""
    metric, k = headline[0]
    order = rankings(table, metric, k)
    return {
        "a": {"version": a["version"], "sha256": a["sha256"]}, "b": {"version": b["version"], "sha256": b["sha256"]},
        "changes": {change: sorted(changes[changes["change"] == change]["qid"], key=natural_key)
                    for change in sorted(set(changes["change"]))},
        "flips": {method: {f"{flip}@{k}": sorted(group[(group["flip"] == flip) & (group["k"] == k)]["qid"],
                                                 key=natural_key)
                           for k in sorted(set(group["k"])) for flip in ("found", "lost")}
                  for method, group in flipped.groupby("method")},
        "ranking_metric": f"{metric}@{k}", "rankings": order,
        "ranking_changed": order["a_all"] != order["b_all"],
        "ranking_changed_on_common": order["a_common"] != order["b_common"],
    }
