"""The metrics, one table: name, display label, family, cutoff, the trec_eval / ir-measures aliases of each and
every fact the computation needs about it (how deep it reads the run, ideal gains, grades, parameters).

Every table, plot and page takes its labels here, metrics.py its name lists and what to prepare for each metric, the
CLI and the config what they accept (tests/evaluation/test_metric_names.py keeps the schema and the docs in step;
tests/evaluation/test_metric_table.py checks each metric alone gives what it gives among all the others). Adding a
metric: docs/development.md, "Add a metric".
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One metric. family: `standard` (always computed), `pollution` (chunk grain, always) or `extra` (computed
    on request, `evaluation.metrics`); cutoff: `k` (at each k), `whole` (the whole run, reported with k = 0) or
    `either` (at k, or the whole run when named without one, as trec_eval's map, recip_rank and ndcg);
    aliases: other names (case-insensitive); cut_aliases: trec_eval's cut families, which need a cutoff.
    The rest is what metrics.py prepares for it, so that it gives the same value asked alone or with others."""

    label: str
    family: str
    cutoff: str
    aliases: tuple[str, ...] = ()
    cut_aliases: tuple[str, ...] = ()
    reads: str = "k"  # how deep it reads each run: to rank max(k), to rank R too ("r"), or every result ("run")
    ideal_gains: bool = False  # divides by the ideal ranking's DCG
    nonrelevant_counts: bool = False  # reads each question's number of judged non-relevant labels
    graded: bool = False  # reads every positive grade whatever the relevance threshold (trec_eval -l leaves it at 1)
    max_grade: int | None = None  # the highest grade it can score (None: any)
    parameters: tuple[str, ...] = ()  # what ir_measures' NAME(key=value) form may set
    ranked: bool = True  # a quality where higher is better; False: an uncertainty or a description of the list
    pool_bounded: bool = False  # over unjudged items, between their all-not-relevant and all-relevant values


ERR_MAX_GRADE = 4  # ERR's stopping probability is (2^grade - 1) / 2^4, as in gdeval (TREC Web track)


class MetricNameError(ValueError):
    """A metric name or parameter that cannot be read; the CLI shows it as an argument error."""


METRICS: dict[str, Metric] = {
    "hit": Metric("hit", "standard", "k", cut_aliases=("success", "hit_rate"), pool_bounded=True),
    "recall": Metric("R", "standard", "k", aliases=("r",), pool_bounded=True),
    "rcap_recall": Metric("R-cap", "standard", "k", pool_bounded=True),
    "precision": Metric("P", "standard", "k", cut_aliases=("p",), pool_bounded=True),
    "rr": Metric("MRR", "standard", "either", aliases=("mrr", "recip_rank"), pool_bounded=True),
    "ndcg": Metric("nDCG", "standard", "either", cut_aliases=("ndcg_cut",), ideal_gains=True, graded=True),
    "dcg": Metric("DCG", "standard", "k", graded=True, pool_bounded=True),
    "ap": Metric("AP", "standard", "either", aliases=("map",), cut_aliases=("map_cut",)),
    "judged": Metric("judged", "standard", "k"),
    "mean_grade": Metric("grade", "standard", "k"),
    "r_precision": Metric("R-prec", "standard", "whole", aliases=("rprec", "r-precision"), reads="r"),
    # Chunk grain only: how many distinct documents the top k shows, and how much of it one document takes.
    "distinct_docs": Metric("docs", "pollution", "k", ranked=False),
    "top_doc_share": Metric("top-doc", "pollution", "k", ranked=False),
    # Computed only when asked for (the defaults stay as fast as before): trec_eval's bpref and infAP, gdeval's
    # ERR@k (grades 0..4), rank-biased precision RBP(p) and its residual (the most unjudged results could add), and
    # condensed nDCG@k (trec_eval -J: unjudged results removed before ranking, so it reads below rank k).
    "err": Metric("ERR", "extra", "k", max_grade=ERR_MAX_GRADE),
    "ndcg_condensed": Metric("nDCG'", "extra", "k", reads="run", ideal_gains=True, graded=True),
    "bpref": Metric("bpref", "extra", "whole", reads="run", nonrelevant_counts=True),
    "infap": Metric("infAP", "extra", "whole", reads="run"),
    "rbp": Metric("RBP", "extra", "whole", reads="run", parameters=("p",)),
    "rbp_residual": Metric("RBP-res", "extra", "whole", reads="run", parameters=("p",), ranked=False),
}


def metric_names(family: str, *cutoffs: str) -> tuple[str, ...]:
    """Names of a family's metrics with one of these cutoffs, in table order."""
    return tuple(name for name, metric in METRICS.items() if metric.family == family and metric.cutoff in cutoffs)


METRICS_AT_K = metric_names("standard", "k", "either")
METRICS_FULL = metric_names("standard", "whole")  # reported with k = 0, meaning "no cutoff"
POLLUTION_METRICS = metric_names("pollution", "k")
EXTRA_METRICS_AT_K = metric_names("extra", "k")
EXTRA_METRICS_FULL = metric_names("extra", "whole")
METRIC_NAMES = {name: metric.label for name, metric in METRICS.items()}
# trec_eval / ir-measures names accepted for ours (case-insensitive); trec_eval's cut families need a cutoff.
METRIC_ALIASES = {alias: name for name, metric in METRICS.items() for alias in metric.aliases + metric.cut_aliases}
CUT_FAMILIES = tuple(alias for metric in METRICS.values() for alias in metric.cut_aliases)
# Without a cutoff these are computed over the whole run, as trec_eval's map, recip_rank and ndcg are.
UNCUT = tuple(name for name, metric in METRICS.items() if metric.cutoff == "either")
# Read every positive grade whatever the relevance threshold (trec_eval's ndcg, ndcg_cut): a question with a positive
# label but none at the threshold has a value for them, as trec_eval gives it under -l.
GRADED_METRICS = tuple(name for name, metric in METRICS.items() if metric.graded)
NOT_RANKED_METRICS = tuple(name for name, metric in METRICS.items() if not metric.ranked)
# Bounded when each unjudged item of the pool may be not relevant or just relevant: those reading only the top k grow
# as its items turn relevant; recall (and R-cap) also falls as items outside it do. nDCG, AP and the rest divide by
# an ideal that moves with every item turned relevant, so they can go either way.
POOL_BOUNDED_METRICS = tuple(name for name, metric in METRICS.items() if metric.pool_bounded)


def metric_label(metric: str, k: int) -> str:
    """Column heading such as nDCG@10 (k = 0 means no cut-off)."""
    name = METRIC_NAMES.get(metric, metric)
    return f"{name}@{k}" if k else name


_TREC_CUT = re.compile(r"^(.+?)[_.](\d+)$")  # trec_eval's P_5, ndcg_cut_10 (as printed) or P.5 (as in -m)


def _split_cutoff(item: str) -> tuple[str, str]:
    """('ndcg', '10') from ndcg@10, ndcg_cut_10 or ndcg_cut.10; (name, '') without a cutoff."""
    name, at, cut = item.partition("@")
    if at:
        return name.lower(), cut
    match = _TREC_CUT.match(item.lower())
    if match and (match.group(1) in METRIC_ALIASES or match.group(1) in METRICS):
        return match.group(1), match.group(2)
    return item.lower(), ""


_IR_MEASURES_FORM = re.compile(r"^([A-Za-z][\w-]*)\(([^()]*)\)(@\d+)?$")  # ir_measures' RBP(p=0.8), P(rel=2)@5


def metric_text(measure: object) -> str:
    """A metric given as text, or as an ir_measures object (duck-typed: its NAME and params), as the text
    parse_metrics reads: ir_measures.nDCG@10 -> 'nDCG@10', ir_measures.RBP(p=0.9) -> 'RBP(p=0.9)'."""
    if isinstance(measure, str):
        return measure
    name, params = getattr(measure, "NAME", None), getattr(measure, "params", None)
    if not isinstance(name, str) or not isinstance(params, dict):
        raise MetricNameError(f"cannot read metric {measure!r} (a {type(measure).__name__}): give a name "
                                         f"or an ir_measures measure; known: {known_metrics_text()}")
    cutoff = params.get("cutoff")
    options = ",".join(f"{key}={value}" for key, value in sorted(params.items()) if key != "cutoff")
    return name + (f"({options})" if options else "") + (f"@{cutoff}" if cutoff is not None else "")


def split_parameters(item: str) -> tuple[str, dict[str, str]]:
    """('RBP', {'p': '0.8'}) from ir_measures' 'RBP(p=0.8)', ('P@5', {'rel': '2'}) from 'P(rel=2)@5', (item, {})
    from a plain name."""
    match = _IR_MEASURES_FORM.match(item)
    if not match:
        return item, {}
    pairs = [part.partition("=") for part in match.group(2).split(",") if part.strip()]
    return match.group(1) + (match.group(3) or ""), {key.strip(): value.strip() for key, _, value in pairs}


def rbp_persistence(text: str) -> float:
    """RBP's persistence: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise MetricNameError(f"must be a number strictly between 0 and 1, got {text!r}")
    return value


def persistence(items: list[str]) -> float | None:
    """RBP's persistence p named in the metrics (ir_measures' RBP(p=0.9)), None when none names one; two different
    values, another parameter, or a p outside (0, 1) raise."""
    found: set[float] = set()
    for item in items:
        name, params = split_parameters(item)
        for key, value in params.items():
            base = _split_cutoff(name)[0]
            metric = METRICS.get(METRIC_ALIASES.get(base, base))
            if key != "p" or metric is None or key not in metric.parameters:  # p is the only parameter read here
                raise MetricNameError(
                    f"cannot read metric {item!r}: rankbench takes no parameter {key!r} in a metric name (the "
                    "relevance threshold is relevance_threshold / -l, RBP's persistence RBP(p=0.8))")
            try:
                found.add(rbp_persistence(value))
            except MetricNameError as error:
                raise MetricNameError(f"cannot read metric {item!r}: p {error}") from None
    if len(found) > 1:
        raise MetricNameError(f"metrics name RBP with two persistences ({sorted(found)}): give one")
    return found.pop() if found else None


def known_metrics_text() -> str:
    """Every metric name --metrics accepts, for its help and its error."""
    aliases = ", ".join(f"{alias} = {metric}" for alias, metric in METRIC_ALIASES.items())
    with_k = METRICS_AT_K + POLLUTION_METRICS + EXTRA_METRICS_AT_K
    return (f"with a cutoff k (NAME@k, or trec_eval's NAME_k / NAME.k): {', '.join(with_k)}; "
            f"without a cutoff (whole run): {', '.join(UNCUT + METRICS_FULL + EXTRA_METRICS_FULL)}; "
            f"aliases (case-insensitive): {aliases}; ir_measures objects and names such as nDCG@10, "
            f"RBP(p=0.8) are read too; "
            f"{', '.join(CUT_FAMILIES)} need a cutoff")


def split_metric_list(text: str) -> list[str]:
    """Comma-separated names, commas inside ir_measures' parentheses kept: 'RBP(p=0.8),P@5' -> two names."""
    return re.split(r",(?![^()]*\))", text)


def parse_metrics(text: str) -> list[tuple[str, int]]:
    """'ndcg@10,P_5,map,Rprec' -> [('ndcg', 10), ('precision', 5), ('ap', 0), ('r_precision', 0)]; k = 0 means the
    whole run (trec_eval's uncut map, recip_rank, ndcg, Rprec)."""
    items = [part.strip() for part in split_metric_list(text) if part.strip()]
    persistence(items)  # refuses parameters other than RBP's p
    parsed = []
    for item in items:
        name, cut = _split_cutoff(split_parameters(item)[0])
        metric = METRIC_ALIASES.get(name, name)
        if not cut and (metric in METRICS_FULL + EXTRA_METRICS_FULL
                        or (metric in UNCUT and name not in CUT_FAMILIES)):
            parsed.append((metric, 0))
        elif metric in METRICS_AT_K + POLLUTION_METRICS + EXTRA_METRICS_AT_K and cut.isdigit() and int(cut) > 0:
            parsed.append((metric, int(cut)))
        else:
            raise MetricNameError(f"cannot read metric {item!r}; known: {known_metrics_text()}")
    if not parsed:
        raise MetricNameError("give at least one metric, e.g. ndcg@10,recall@100")
    return parsed
