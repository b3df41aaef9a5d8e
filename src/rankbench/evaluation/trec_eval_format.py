"""`rankbench eval` as a trec_eval drop-in: trec_eval's measure names (-m P.5,10, ndcg_cut.10, map, ...) and its
three-column output (measure, qid or `all`, value), with its -q, -c, -n, -M and -l and its handling of topics.

As trec_eval: a topic is evaluated when the run and the qrels both have it (-c: every qrels topic, 0 where the run
lacks it); topics whose labels are all below the relevance level count (``zero_topics="include"``; the rankbench
default, "exclude", leaves them out as the workflow's tables do), scoring 0 except on the graded measures (ndcg,
ndcg_cut), which read every positive grade whatever -l. Measures print in trec_eval's order (its measure table,
cutoffs ascending), whatever the order of -m, so the output diffs clean against trec_eval's. Values print with 4
decimals, counts as integers, as trec_eval prints them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rankbench.evaluation.metric_names import GRADED_METRICS, MetricNameError, parse_metrics
from rankbench.evaluation.scoring import runs_per_query

# trec_eval's default cutoffs of its parameterized measures (P, recall, ndcg_cut, map_cut; success: 1, 5, 10).
CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_FAMILIES = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "ap", "success": "hit"}
_WHOLE = {"map": ("ap", 0), "recip_rank": ("rr", 0), "ndcg": ("ndcg", 0), "Rprec": ("r_precision", 0),
          "bpref": ("bpref", 0), "infAP": ("infap", 0)}
COUNTS = ("num_q", "num_ret", "num_rel", "num_rel_ret")
# trec_eval's `official` measures that rankbench computes (it lacks gm_map and iprec_at_recall).
OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
            "P.5,10,15,20,30,100,200,500,1000")
ZERO_TOPICS = ("include", "exclude")
# The order trec_eval prints its measures in (its te_trec_measures table); rankbench's own names follow, as given.
TREC_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P",
              "recall", "infAP", "ndcg", "ndcg_cut", "map_cut", "success")


@dataclass(frozen=True)
class Measure:
    """One output measure: its trec_eval name, and the (metric, k) computing it (None for runid and counts)."""

    name: str
    metric: tuple[str, int] | None


def trec_name(metric: str, k: int) -> str:
    """trec_eval's printed name of a rankbench (metric, k), or rankbench's own name where trec_eval has none."""
    for name, key in _WHOLE.items():
        if key == (metric, k):
            return name
    for family, ours in _FAMILIES.items():
        if ours == metric and k:
            return f"{family}_{k}"
    return f"{metric}@{k}" if k else metric


def parse_trec_measures(items: Sequence[str]) -> list[Measure]:
    """trec_eval's -m values (P.5,10 / P / ndcg_cut.10 / map / num_q / official), or rankbench names, as Measures."""
    measures: list[Measure] = []
    for item in items:
        family, dot, cutoffs = item.partition(".")
        if item in ("official", "all_trec"):
            measures += parse_trec_measures(OFFICIAL)
        elif item == "runid" or item in COUNTS:
            measures.append(Measure(item, None))
        elif family in _FAMILIES:
            ks = [int(k) for k in cutoffs.split(",") if k.strip().isdigit() and int(k) > 0] if dot else \
                ([1, 5, 10] if family == "success" else list(CUTOFFS))
            if not ks or (dot and len(ks) != len(cutoffs.split(","))):
                raise MetricNameError(f"cannot read measure {item!r}: cutoffs are whole numbers, e.g. "
                                                 f"{family}.5,10")
            measures += [Measure(f"{family}_{k}", (_FAMILIES[family], k)) for k in ks]
        elif item in _WHOLE:
            measures.append(Measure(item, _WHOLE[item]))
        else:  # a rankbench / ir_measures name (ndcg@10, RR@10, judged@10): printed under trec_eval's name if any
            measures += [Measure(trec_name(*key), key) for key in parse_metrics(item)]
    unique = list({measure.name: measure for measure in measures}.values())
    return sorted(unique, key=_trec_position)


def _trec_position(measure: Measure) -> tuple[int, int]:
    """Where trec_eval prints a measure: its family's place in TREC_ORDER, then its cutoff (rankbench's own names
    after every trec_eval measure; sorted() keeps their given order)."""
    family, _, cutoff = measure.name.rpartition("_") if measure.name[-1].isdigit() else (measure.name, "", "0")
    if family in TREC_ORDER and cutoff.isdigit():
        return TREC_ORDER.index(family), int(cutoff)
    return len(TREC_ORDER), 0


def _counts(run: pd.DataFrame, qrels: pd.DataFrame, qids: Sequence[str], level: int) -> pd.DataFrame:
    """num_ret, num_rel, num_rel_ret per topic (qids as index)."""
    relevant = qrels[qrels["grade"] >= level]
    judged = run.merge(relevant.rename(columns={"item_id": "doc_id"})[["qid", "doc_id"]], on=["qid", "doc_id"])
    return pd.DataFrame({"num_ret": run.groupby("qid").size(), "num_rel": relevant.groupby("qid").size(),
                         "num_rel_ret": judged.groupby("qid").size()}).reindex(list(qids)).fillna(0).astype(int)


def trec_eval_lines(qrels: pd.DataFrame, runs: Mapping[str, pd.DataFrame], measures: Sequence[Measure], *,
                    per_query: bool = False, complete: bool = False, summary: bool = True,
                    max_depth: int | None = None, relevance_level: int = 1, zero_topics: str = "include"
                    ) -> list[str]:
    """trec_eval's output lines for each run (qrels: qid, item_id, grade; runs: RUN_COLUMNS at document grain, in
    rank order, keyed by run tag): per topic (-q) then `all` (unless -n), topics in qid order."""
    if zero_topics not in ZERO_TOPICS:
        raise ValueError(f"zero_topics must be one of {ZERO_TOPICS}, got {zero_topics!r}")
    metrics = list(dict.fromkeys(m.metric for m in measures if m.metric is not None))
    labelled = set(qrels.loc[qrels["grade"] >= relevance_level, "qid"])
    lines = []
    for tag, run in runs.items():
        run = run if max_depth is None else run[run["rank"] <= max_depth]
        run = run[run["qid"].isin(set(qrels["qid"]))]
        topics = set(qrels["qid"]) if complete else set(run["qid"])
        if zero_topics == "exclude":
            topics &= labelled
        qids = sorted(topics)
        values = {key: pd.Series(0.0, index=qids, dtype=float) for key in metrics}  # unlabelled topics: 0
        # trec_eval's graded measures read every positive grade whatever -l: scored at level 1, the others at -l
        for level, keys in ((1, [k for k in metrics if k[0] in GRADED_METRICS]),
                            (relevance_level, [k for k in metrics if k[0] not in GRADED_METRICS])):
            if keys and qids:
                long = runs_per_query({tag: run}, qrels, keys, relevance_threshold=level)
                wide = long.pivot_table(index="qid", columns=["metric", "k"], values="value", aggfunc="first")
                for key in keys:
                    column = wide[key] if key in wide.columns else pd.Series(dtype=float)
                    values[key] = column.reindex(qids).fillna(0.0)
        counts = _counts(run, qrels, qids, relevance_level)
        rows = [(qid, qid) for qid in qids] if per_query else []
        for qid, label in rows + ([(None, "all")] if summary else []):
            for measure in measures:
                if measure.name == "runid":
                    if qid is None:
                        lines.append(f"{'runid':<22}\tall\t{tag}")
                elif measure.name == "num_q":
                    if qid is None:
                        lines.append(f"{'num_q':<22}\tall\t{len(qids)}")
                elif measure.metric is None:
                    count = counts[measure.name]
                    lines.append(f"{measure.name:<22}\t{label}\t{int(count.sum() if qid is None else count[qid])}")
                else:
                    column = values[measure.metric]
                    value = (column.mean() if len(column) else 0.0) if qid is None else column[qid]
                    lines.append(f"{measure.name:<22}\t{label}\t{value:.4f}")
    return lines
