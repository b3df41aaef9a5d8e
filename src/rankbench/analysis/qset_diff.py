"""Diff of two question-set versions: questions added, removed or changed (text, fields, labels), every method's
metrics on each version and on the questions common to both, questions found or lost per method, and whether the
ranking of methods changed. Changing the question set between two comparisons must not go unnoticed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rankbench.evaluation.metric_names import metric_label
from rankbench.io.markdown import markdown_grid, markdown_literal, natural_key, natural_order

CHANGE_COLUMNS = ["qid", "change", "before", "after"]
FIELDS = ("question", "kind", "audience", "as_of")


def _text(values: pd.Series) -> pd.Series:
    """Values as text with missing ones (None, NaN) as "": astype(str) turns None into NaN, and NaN != NaN."""
    return values.map(lambda v: "" if pd.isna(v) else str(v))


def _labels_text(labels: pd.DataFrame) -> pd.Series:
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
    la, lb = _labels_text(labels_a).reindex(common).fillna(""), _labels_text(labels_b).reindex(common).fillna("")
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


def _ranking_text(table: pd.DataFrame, column: str, metric: str, k: int) -> str:
    """Methods best first on one column, "=" between equal means (to 3 decimals, as printed), ">" otherwise."""
    rows = table[(table["metric"] == metric) & (table["k"] == k)].sort_values([column, "method"],
                                                                            ascending=[False, True])
    means = [f"{v:.3f}" for v in rows[column]]
    return "".join(("" if i == 0 else " = " if means[i] == means[i - 1] else " > ") + method
                   for i, method in enumerate(rows["method"]))


def diff_markdown(summary: Mapping[str, Any], changes: pd.DataFrame, table: pd.DataFrame, flipped: pd.DataFrame,
                  grain: str) -> str:
    """The diff page: what changed in the questions, what it does to each method, and to the ranking."""
    va, vb = summary["a"]["version"], summary["b"]["version"]
    counts = ", ".join(f"{len(ids)} {change}" for change, ids in summary["changes"].items()) or "no change"
    lines = [f"# Question-set versions {va} → {vb}", "",
             f"- {va}: sha256 `{summary['a']['sha256']}`", f"- {vb}: sha256 `{summary['b']['sha256']}`",
             f"- changes: {counts}", ""]
    metric, _, k = summary["ranking_metric"].partition("@")
    metric_name = metric_label(metric, int(k))
    order = {column: _ranking_text(table, column, metric, int(k))
             for column in ("a_all", "b_all", "a_common", "b_common")}
    if summary["ranking_changed"]:
        lines.append(f"- **the ranking of methods on {metric_name} changed**: {va}: {order['a_all']}; "
                     f"{vb}: {order['b_all']}")
    else:
        lines.append(f"- the ranking of methods on {metric_name} is the same on both versions: {order['a_all']}")
    lines.append(f"- on the questions common to both: {'changed' if summary['ranking_changed_on_common'] else 'same'} "
                 f"({va}: {order['a_common']}; {vb}: {order['b_common']})")
    lines += ["", "## Questions", ""]
    if changes.empty:
        lines += ["No question was added, removed or changed.", ""]
    else:
        frame = changes.assign(before=changes["before"].map(markdown_literal),
                               after=changes["after"].map(markdown_literal)).set_index("qid")
        lines += [markdown_grid(frame), ""]
    lines += [f"## Metrics ({grain} grain)", "",
              "*all*: every evaluated question of the version; *common*: questions evaluated in both (same qid, "
              "with each version's own labels).", ""]
    frame = pd.DataFrame({
        "method": table["method"], "metric": [metric_label(m, kk) for m, kk in zip(table["metric"], table["k"])],
        f"{va} all": [f"{v:.3f} (n={n})" for v, n in zip(table["a_all"], table["n_a"])],
        f"{vb} all": [f"{v:.3f} (n={n})" for v, n in zip(table["b_all"], table["n_b"])],
        f"{va} common": table["a_common"].map("{:.3f}".format), f"{vb} common": table["b_common"].map("{:.3f}".format),
        "Δ common": (table["b_common"] - table["a_common"]).map("{:+.3f}".format),
    }).set_index("method")
    lines += [markdown_grid(frame), "", f"## Questions found or lost (hit@k, common questions, {va} → {vb})", ""]
    if flipped.empty:
        lines += ["No method found or lost a question between the versions at any k.", ""]
    for method, by_k in summary["flips"].items():
        lines.append(f"- {method}: " + "; ".join(f"{name} {', '.join(ids)}" for name, ids in by_k.items() if ids))
    return "\n".join(lines) + "\n"
