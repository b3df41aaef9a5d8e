"""Display names of the metrics (nDCG@10, MRR@10, R-prec): one place for every table, plot and page."""

from __future__ import annotations

import argparse
import re

from rankbench.evaluation.metrics import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
)

METRIC_NAMES = {"hit": "hit", "recall": "R", "precision": "P", "rr": "MRR", "ndcg": "nDCG", "ap": "AP",
                "r_precision": "R-prec", "mean_grade": "grade", "judged": "judged", "rcap_recall": "R-cap",
                "dcg": "DCG", "distinct_docs": "docs", "top_doc_share": "top-doc", "bpref": "bpref", "infap": "infAP",
                "err": "ERR", "ndcg_condensed": "nDCG'", "rbp": "RBP", "rbp_residual": "RBP-res"}


def metric_label(metric: str, k: int) -> str:
    """Column heading such as nDCG@10 (k = 0 means no cut-off)."""
    name = METRIC_NAMES.get(metric, metric)
    return f"{name}@{k}" if k else name


# trec_eval / ir-measures names accepted for ours (case-insensitive); trec_eval's cut families need a cutoff.
METRIC_ALIASES = {"p": "precision", "map": "ap", "map_cut": "ap", "mrr": "rr", "recip_rank": "rr",
                  "success": "hit", "ndcg_cut": "ndcg", "rprec": "r_precision", "r-precision": "r_precision",
                  "r": "recall"}
CUT_FAMILIES = ("map_cut", "ndcg_cut", "p", "success")
# Without a cutoff these are computed over the whole run, as trec_eval's map, recip_rank and ndcg are.
UNCUT = ("ap", "rr", "ndcg")
_TREC_CUT = re.compile(r"^(.+?)[_.](\d+)$")  # trec_eval's P_5, ndcg_cut_10 (as printed) or P.5 (as in -m)


def _split_cutoff(item: str) -> tuple[str, str]:
    """('ndcg', '10') from ndcg@10, ndcg_cut_10 or ndcg_cut.10; (name, '') without a cutoff."""
    name, at, cut = item.partition("@")
    if at:
        return name.lower(), cut
    match = _TREC_CUT.match(item.lower())
    if match and (match.group(1) in METRIC_ALIASES or match.group(1) in _all_metrics()):
        return match.group(1), match.group(2)
    return item.lower(), ""


def _all_metrics() -> tuple[str, ...]:
    return METRICS_AT_K + POLLUTION_METRICS + EXTRA_METRICS_AT_K + METRICS_FULL + EXTRA_METRICS_FULL


def known_metrics_text() -> str:
    """Every metric name --metrics accepts, for its help and its error."""
    aliases = ", ".join(f"{alias} = {metric}" for alias, metric in METRIC_ALIASES.items())
    with_k = METRICS_AT_K + POLLUTION_METRICS + EXTRA_METRICS_AT_K
    return (f"with a cutoff k (NAME@k, or trec_eval's NAME_k / NAME.k): {', '.join(with_k)}; "
            f"without a cutoff (whole run): {', '.join(UNCUT + METRICS_FULL + EXTRA_METRICS_FULL)}; "
            f"aliases (case-insensitive): {aliases}; "
            f"{', '.join(CUT_FAMILIES)} need a cutoff")


def parse_metrics(text: str) -> list[tuple[str, int]]:
    """'ndcg@10,P_5,map,Rprec' -> [('ndcg', 10), ('precision', 5), ('ap', 0), ('r_precision', 0)]; k = 0 means the
    whole run (trec_eval's uncut map, recip_rank, ndcg, Rprec)."""
    parsed = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, cut = _split_cutoff(item)
        metric = METRIC_ALIASES.get(name, name)
        if not cut and (metric in METRICS_FULL + EXTRA_METRICS_FULL
                        or (metric in UNCUT and name not in CUT_FAMILIES)):
            parsed.append((metric, 0))
        elif metric in METRICS_AT_K + POLLUTION_METRICS + EXTRA_METRICS_AT_K and cut.isdigit() and int(cut) > 0:
            parsed.append((metric, int(cut)))
        else:
            raise argparse.ArgumentTypeError(f"cannot read metric {item!r}; known: {known_metrics_text()}")
    if not parsed:
        raise argparse.ArgumentTypeError("give at least one metric, e.g. ndcg@10,recall@100")
    return parsed
