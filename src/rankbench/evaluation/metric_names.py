"""The metrics, one table: each row is one metric whole: name, display label, family, cutoff, the trec_eval /
ir-measures aliases, its formula and every fact the computation needs about it (how deep it reads the run, ideal
gains, grades, parameters).

Every table, plot and page takes its labels here, metrics.py its name lists, what to prepare for each metric and
the formula it calls, the CLI and the config what they accept (tests/evaluation/test_metric_names.py keeps the
schema and the docs in step; tests/evaluation/test_metric_table.py checks each metric alone gives what it gives
among all the others). Adding a metric: docs/development.md, "Add a metric".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rankbench.evaluation.metric_inputs import (
    UNJUDGED,
    MetricInput,
    at,
    condensed,
    cumulative_dcg,
    gains,
    safe_divide,
)

Formula = Callable[[MetricInput], np.ndarray]
# A row's family and cutoff as the docs' metric table says them.
COMPUTED = {"standard": "always", "pollution": "chunk grain", "extra": "on request"}
CUTOFFS = {"k": "k", "whole": "whole run", "either": "either"}
# Where docs/concepts/metrics.md shows the metric table: its mkdocs hook (docs/hooks/metric_table.py) writes
# metric_table_markdown() there, so the page lists exactly the rows of METRICS.
METRIC_TABLE_MARKER = "<!-- the metric table: rendered from METRICS (src/rankbench/evaluation/metric_names.py) -->"


@dataclass(frozen=True)
class Metric:
    """One metric. family: `standard` (always computed), `pollution` (chunk grain, always) or `extra` (computed
    on request, `evaluation.metrics`); cutoff: `k` (at each k), `whole` (the whole run, reported with k = 0) or
    `either` (at k, or the whole run when named without one, as trec_eval's map, recip_rank and ndcg);
    formula: its values from a MetricInput, a [question, len(ks)] array ([question, 1] when whole-run);
    what and checked: the docs' description of it and the reference it equals (the metric table of
    docs/concepts/metrics.md is rendered from them: metric_table_markdown);
    aliases: other names (case-insensitive); cut_aliases: trec_eval's cut families, which need a cutoff.
    The rest is what metrics.py prepares for it, so that it gives the same value asked alone or with others."""

    label: str
    family: str
    cutoff: str
    formula: Formula
    what: str  # what it measures, in a line: its row of docs/concepts/metrics.md's table
    checked: str  # the reference its values are tested against, per question to 1e-9 (tests/evaluation/test_metrics.py)
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

    def __post_init__(self) -> None:
        if self.family not in COMPUTED or self.cutoff not in CUTOFFS:
            raise ValueError(f"metric {self.label}: family must be one of {', '.join(COMPUTED)}, cutoff one of "
                             f"{', '.join(CUTOFFS)}")
        if not self.what or not self.checked or "|" in self.what + self.checked:
            raise ValueError(f"metric {self.label}: `what` and `checked` are one line each of the docs' table (no |)")


ERR_MAX_GRADE = 4  # ERR's stopping probability is (2^grade - 1) / 2^4, as in gdeval (TREC Web track)


class MetricNameError(ValueError):
    """A metric name or parameter that cannot be read; the CLI shows it as an argument error."""


# The formulas, in table order; the comment of each names the reference it equals.


def _hit(m: MetricInput) -> np.ndarray:
    """trec_eval success.k: 1 when a relevant result is in the top k."""
    return (m.rel_at_k > 0).astype(np.float64)


def _recall(m: MetricInput) -> np.ndarray:
    """trec_eval recall.k: divides by all relevant."""
    return m.rel_at_k / m.n_rel_col


def _rcap_recall(m: MetricInput) -> np.ndarray:
    """BEIR R_cap@k: divides by min(all relevant, k)."""
    return m.rel_at_k / np.minimum(m.n_rel_col, m.k_row)


def _precision(m: MetricInput) -> np.ndarray:
    """trec_eval P.k: divides by k even when fewer were retrieved."""
    return m.rel_at_k / m.k_row


def _rr(m: MetricInput) -> np.ndarray:
    """trec_eval recip_rank on the run cut at k."""
    first = np.where(m.rel.any(axis=1), m.rel.argmax(axis=1) + 1, 0)[:, None]  # 0: none found
    found = (first > 0) & (first <= m.ks[None, :])
    return safe_divide(found.astype(np.float64), first.astype(np.float64))


def _ndcg(m: MetricInput) -> np.ndarray:
    """trec_eval ndcg_cut.k: every positive grade counts, whatever the threshold."""
    return safe_divide(m.dcg_at_k, m.ideal_dcg_at_k)


def _dcg(m: MetricInput) -> np.ndarray:
    """DCG@k of every positive grade (ir-measures' nDCG numerator)."""
    return m.dcg_at_k


def _ap(m: MetricInput) -> np.ndarray:
    """trec_eval map_cut.k: divides by all relevant."""
    precision_at_rel = np.where(m.rel, m.cum_rel / (m.positions + 1.0), 0.0)
    return at(np.cumsum(precision_at_rel, axis=1), m.ks) / m.n_rel_col


def _judged(m: MetricInput) -> np.ndarray:
    """ir-measures Judged@k (any grade, negative too): divides by min(k, retrieved)."""
    judged_at_k = at(np.cumsum(m.grades > UNJUDGED, axis=1, dtype=np.int32), m.ks).astype(np.float64)
    return safe_divide(judged_at_k, m.shown)


def _mean_grade(m: MetricInput) -> np.ndarray:
    """Mean grade of the results shown (min(k, retrieved)); unjudged and negative grades count 0."""
    grade_sum = at(np.cumsum(np.maximum(m.grades, 0), axis=1, dtype=np.int64), m.ks).astype(np.float64)
    return safe_divide(grade_sum, m.shown)


def _r_precision(m: MetricInput) -> np.ndarray:
    """trec_eval Rprec: precision at rank R, the number relevant."""
    at_r = np.minimum(m.n_rel, m.grades.shape[1]) - 1
    return (m.cum_rel[np.arange(len(m.n_rel)), at_r] / m.n_rel)[:, None]


def _distinct_docs(m: MetricInput) -> np.ndarray:
    """Documents among the top k results."""
    return m.document_counts[0]


def _top_doc_share(m: MetricInput) -> np.ndarray:
    """Results of the most frequent document in the top k / min(k, retrieved)."""
    return safe_divide(m.document_counts[1], m.shown)


def _err(m: MetricInput) -> np.ndarray:
    """gdeval ERR@k: cascade with stop probability (2^grade - 1) / 2^ERR_MAX_GRADE."""
    stop = (np.exp2(np.maximum(m.grades, 0).astype(np.float64)) - 1.0) / 2.0 ** ERR_MAX_GRADE
    reach = np.cumprod(np.hstack([np.ones((len(m.grades), 1)), 1.0 - stop[:, :-1]]), axis=1)
    return at(np.cumsum(stop * reach / (m.positions + 1.0), axis=1), m.ks)


def _ndcg_condensed(m: MetricInput) -> np.ndarray:
    """trec_eval -J ndcg_cut.k: nDCG of the judged results only (a negative grade counts as not judged)."""
    return safe_divide(at(cumulative_dcg(gains(condensed(m.grades), m.gain)), m.ks), m.ideal_dcg_at_k)


def _bpref(m: MetricInput) -> np.ndarray:
    """trec_eval bpref: each relevant result loses the share of judged non-relevant above it."""
    cap = np.minimum(m.n_nonrel, m.n_rel)[:, None].astype(np.float64)
    above = np.minimum(m.nonrel_before, m.n_rel[:, None]).astype(np.float64)
    term = np.where(m.nonrel_before > 0, 1.0 - safe_divide(above, np.broadcast_to(cap, above.shape)), 1.0)
    return (np.where(m.rel, term, 0.0).sum(axis=1) / m.n_rel.astype(np.float64))[:, None]


INFAP_EPSILON = 0.00001  # trec_eval's smoothing in infAP


def _infap(m: MetricInput) -> np.ndarray:
    """trec_eval infAP: a negative grade is pooled but unjudged, an unlabelled result unpooled."""
    rel_so_far = m.cum_rel.astype(np.float64)
    pooled_unjudged = np.cumsum((m.grades < 0) & (m.grades > UNJUDGED), axis=1, dtype=np.int64)
    judged_above = rel_so_far - 1 + m.nonrel_before
    positions = m.positions
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = (1.0 / (positions + 1.0) + (positions / (positions + 1.0))
                    * ((judged_above + pooled_unjudged) / positions)
                    * ((rel_so_far - 1 + INFAP_EPSILON) / (judged_above + 2 * INFAP_EPSILON)))
    estimate[:, 0] = 1.0
    return (np.where(m.rel, estimate, 0.0).sum(axis=1) / m.n_rel.astype(np.float64))[:, None]


def _rbp(m: MetricInput) -> np.ndarray:
    """Moffat & Zobel's RBP: (1 - p) sum of p^(rank - 1) over relevant results."""
    return np.einsum("qd,d->q", m.rel, m.rbp_weights, optimize=False)[:, None]  # BLAS-free: thread-proof


def _rbp_residual(m: MetricInput) -> np.ndarray:
    """RBP's residual: the weight of results retrieved without a label, plus p^depth beyond the run."""
    unjudged = np.einsum("qd,d->q", m.grades == UNJUDGED, m.rbp_weights, optimize=False)
    return (unjudged + m.rbp_p ** m.run_length.astype(np.float64))[:, None]


METRICS: dict[str, Metric] = {
    "hit": Metric("hit", "standard", "k", _hit, cut_aliases=("success", "hit_rate"), pool_bounded=True,
                  what="1 when a relevant result is in the top k (trec_eval's success)",
                  checked="pytrec_eval `success`, ir-measures `Success`"),
    "recall": Metric("R", "standard", "k", _recall, aliases=("r",), pool_bounded=True,
                     what="relevant results in the top k / all relevant",
                     checked="pytrec_eval `recall`, ir-measures `R`"),
    "rcap_recall": Metric("R-cap", "standard", "k", _rcap_recall, pool_bounded=True,
                          what="R-cap recall (BEIR): relevant results in the top k / min(all relevant, k)",
                          checked="a plain loop"),
    "precision": Metric("P", "standard", "k", _precision, cut_aliases=("p",), pool_bounded=True,
                        what="relevant results in the top k / k, even when fewer were retrieved",
                        checked="pytrec_eval `P`, ir-measures `P`"),
    "rr": Metric("MRR", "standard", "either", _rr, aliases=("mrr", "recip_rank"), pool_bounded=True,
                 what="reciprocal rank of the first relevant result, 0 when it is below k",
                 checked="pytrec_eval `recip_rank` on the run cut at k, ir-measures `RR`"),
    "ndcg": Metric("nDCG", "standard", "either", _ndcg, cut_aliases=("ndcg_cut",), ideal_gains=True, graded=True,
                   what="nDCG@k over every positive grade, whatever the threshold (trec_eval's `ndcg_cut`)",
                   checked="pytrec_eval `ndcg_cut`, ir-measures `nDCG`"),
    "dcg": Metric("DCG", "standard", "k", _dcg, graded=True, pool_bounded=True,
                  what="DCG@k, nDCG's numerator",
                  checked="pytrec_eval `ndcg_cut` × its ideal DCG"),
    "ap": Metric("AP", "standard", "either", _ap, aliases=("map",), cut_aliases=("map_cut",),
                 what="average precision of the top k / all relevant (trec_eval's `map_cut`)",
                 checked="pytrec_eval `map_cut`, ir-measures `AP`"),
    "judged": Metric("judged", "standard", "k", _judged,
                     what="judged results (any grade) in the top k / min(k, retrieved), as ir-measures",
                     checked="ir-measures `Judged`"),
    "mean_grade": Metric("grade", "standard", "k", _mean_grade,
                         what="mean grade of the results shown (min(k, retrieved)); unjudged results count 0; 0 "
                              "when nothing was retrieved",
                         checked="a plain loop"),
    "r_precision": Metric("R-prec", "standard", "whole", _r_precision, aliases=("rprec", "r-precision"), reads="r",
                          what="precision at rank R, the number relevant (trec_eval's `Rprec`)",
                          checked="pytrec_eval `Rprec`, ir-measures `Rprec`"),
    # Chunk grain only: how many distinct documents the top k shows, and how much of it one document takes.
    "distinct_docs": Metric("docs", "pollution", "k", _distinct_docs, ranked=False,
                            what="documents among the top k chunks",
                            checked="a plain loop"),
    "top_doc_share": Metric("top-doc", "pollution", "k", _top_doc_share, ranked=False,
                            what="chunks of the most frequent document in the top k / results shown",
                            checked="a plain loop"),
    # Computed only when asked for (the defaults stay as fast as before): trec_eval's bpref and infAP, gdeval's
    # ERR@k (grades 0..4), rank-biased precision RBP(p) and its residual (the most unjudged results could add), and
    # condensed nDCG@k (trec_eval -J: unjudged results removed before ranking, so it reads below rank k).
    "err": Metric("ERR", "extra", "k", _err, max_grade=ERR_MAX_GRADE,
                  what="ERR@k (Chapelle et al.), stop probability (2^grade − 1)/16 as gdeval; grades above 4 are "
                       "refused",
                  checked="ir-measures' gdeval.pl (printed to 12 decimals)"),
    "ndcg_condensed": Metric("nDCG'", "extra", "k", _ndcg_condensed, reads="run", ideal_gains=True, graded=True,
                             what="condensed nDCG@k: unjudged results (and negative grades) removed before cutting "
                                  "at k (trec_eval `-J`)",
                             checked="pytrec_eval `ndcg_cut` with `judged_docs_only_flag`"),
    "bpref": Metric("bpref", "extra", "whole", _bpref, reads="run", nonrelevant_counts=True,
                    what="trec_eval's bpref: relevant results above judged non-relevant ones",
                    checked="pytrec_eval `bpref`"),
    "infap": Metric("infAP", "extra", "whole", _infap, reads="run",
                    what="trec_eval's infAP: AP estimated from incomplete judgements; a negative grade is \"pooled, "
                         "not judged\"",
                    checked="pytrec_eval `infAP`"),
    "rbp": Metric("RBP", "extra", "whole", _rbp, reads="run", parameters=("p",),
                  what="rank-biased precision RBP(p) = (1 − p) Σ p^(i−1) rel_i, p = `evaluation.rbp_p` (0.8)",
                  checked="pytrec_eval P@i at every i"),
    "rbp_residual": Metric("RBP-res", "extra", "whole", _rbp_residual, reads="run", parameters=("p",), ranked=False,
                           what="what RBP could still gain: the weight of unjudged results plus p^(results) beyond "
                                "the run",
                           checked="ir-measures Judged@i at every i"),
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


def metric_table_markdown() -> str:
    """The docs' metric table (docs/concepts/metrics.md, at METRIC_TABLE_MARKER): a row per metric, in table order."""
    rows = [f"| `{name}` | {COMPUTED[metric.family]} | {CUTOFFS[metric.cutoff]} | {metric.what} | {metric.checked} |"
            for name, metric in METRICS.items()]
    return "\n".join(["| name | computed | cutoff | what | checked against (per question, to 1e-9) |",
                      "|---|---|---|---|---|", *rows]) + "\n"


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
