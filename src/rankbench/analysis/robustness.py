"""Robustness of the verdict: perturb the labels (drop some, shift grades, unjudged items as relevant), score the
runs again with the project's metrics, and count how often the best method, the ranking and the marks survive; and
bound the metrics that can be bounded over the unjudged items of the pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rankbench.evaluation.metric_names import POOL_BOUNDED_METRICS
from rankbench.evaluation.metrics import per_query_metrics
from rankbench.evaluation.ppi import judge_corrected
from rankbench.evaluation.scoring import _grain_qrels, _grain_runs
from rankbench.evaluation.stats import TIE_TOLERANCE, holm, randomization_p_values

# (perturbation, level): the share of labels dropped, or the probability that a grade moves by one.
PERTURBATIONS = (("drop labels", 0.1), ("shift grades", 0.1))
REPETITIONS = 10
RESAMPLES = 2000
SURVIVAL_COLUMNS = ["dataset", "qset", "grain", "metric", "k", "perturbation", "level", "repetitions", "best",
                    "best_survives", "tau_mean", "tau_min", "marks", "marks_survive"]
BOUNDS_COLUMNS = ["dataset", "qset", "grain", "metric", "k", "method", "unjudged_share", "reported", "lower",
                  "upper"]
CORRECTED_COLUMNS = ["dataset", "qset", "grain", "metric", "k", "method", "estimator", "estimate", "ci_low", "ci_high",
                     "weight", "n_labelled", "n_unlabelled"]
# judge-corrected.parquet's types: its (empty) frame for a version without LLM judgements has them too
CORRECTED_TYPES = {"dataset": "str", "qset": "str", "grain": "str", "metric": "str", "k": "int64", "method": "str",
                   "estimator": "str", "estimate": "float64", "ci_low": "float64", "ci_high": "float64",
                   "weight": "float64", "n_labelled": "int64", "n_unlabelled": "int64"}


def drop_labels(qrels: pd.DataFrame, share: float, rng: np.random.Generator) -> pd.DataFrame:
    """The qrels without a random `share` of their rows."""
    return qrels[rng.random(len(qrels)) >= share]


def shift_grades(qrels: pd.DataFrame, probability: float, rng: np.random.Generator) -> pd.DataFrame:
    """Each grade moved up or down by one with `probability`, kept within the grades the qrels use."""
    moved = rng.random(len(qrels)) < probability
    step = np.where(rng.random(len(qrels)) < 0.5, -1, 1) * moved
    grades = np.clip(qrels["grade"].to_numpy() + step, qrels["grade"].min(), qrels["grade"].max())
    return qrels.assign(grade=grades)


def pool(runs: Mapping[str, pd.DataFrame], depth: int) -> pd.DataFrame:
    """The distinct (qid, item_id) in the top `depth` of any run."""
    return pd.concat([run.loc[run["rank"] <= depth, ["qid", "item_id"]] for run in runs.values()]).drop_duplicates()


def _among(items: pd.DataFrame, others: pd.DataFrame) -> np.ndarray:
    """Which rows of `items` have a (qid, item_id) of `others` (one lookup, where a merge would also copy columns)."""
    pairs = ["qid", "item_id"]
    return pd.MultiIndex.from_frame(items[pairs]).isin(pd.MultiIndex.from_frame(others[pairs]))


def unjudged_as_relevant(qrels: pd.DataFrame, items: pd.DataFrame, relevance_threshold: int) -> pd.DataFrame:
    """The qrels with every unjudged (qid, item_id) of `items` graded just relevant."""
    added = items.loc[~_among(items, qrels), ["qid", "item_id"]].assign(grade=relevance_threshold)
    return pd.concat([qrels, added], ignore_index=True)


def bounding_qrels(run: pd.DataFrame, qrels: pd.DataFrame, pooled: pd.DataFrame, k: int, relevance_threshold: int
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The qrels of a method's lower and upper bound at k: the pool's unjudged items outside its top k graded just
    relevant (lower: they only grow what recall divides by), or those inside it (upper)."""
    own = run.loc[run["rank"] <= k, ["qid", "item_id"]]
    outside = pooled[~_among(pooled, own)]
    return (unjudged_as_relevant(qrels, outside, relevance_threshold),
            unjudged_as_relevant(qrels, own, relevance_threshold))


def unjudged_share(run: pd.DataFrame, qrels: pd.DataFrame, k: int) -> float:
    """Share of a run's top-`k` items that carry no label (each item once, however many label rows it has)."""
    top = run.loc[run["rank"] <= k, ["qid", "item_id"]]
    return float(1 - _among(top, qrels).mean()) if len(top) else 0.0


def scores(runs: Mapping[str, pd.DataFrame], qrels: Mapping[str, pd.DataFrame], headline: Sequence[tuple[str, int]],
           relevance_threshold: int, gain: str) -> dict[tuple[str, int], pd.DataFrame]:
    """Per headline (metric, k): a wide table of per-query values (qid x method) from the project's metric code
    (no rows when no question has a relevant label, e.g. a judge that grades everything 0)."""
    metrics, ks = sorted({m for m, _ in headline}), sorted({k for _, k in headline})
    long = pd.concat([per_query_metrics(run, qrels[method], ks, relevance_threshold=relevance_threshold, gain=gain,
                                        metrics=metrics).assign(method=method) for method, run in runs.items()],
                     ignore_index=True)
    wide = long.pivot_table(index=["metric", "k", "qid"], columns="method", values="value", aggfunc="first")
    wide = wide.reindex(columns=list(runs)).fillna(0.0)
    found = set(zip(wide.index.get_level_values("metric"), wide.index.get_level_values("k")))
    return {(metric, k): wide.xs((metric, k), level=["metric", "k"]) if (metric, k) in found
            else pd.DataFrame(columns=list(runs), index=pd.Index([], name="qid"), dtype=np.float64)
            for metric, k in headline}


def _method_scores(run: pd.DataFrame, qrels: pd.DataFrame, metrics: Sequence[str], k: int, relevance_threshold: int,
                   gain: str) -> dict[str, pd.Series]:
    """One method's per-question values of each metric at k, indexed by qid (one scoring for them all)."""
    values = per_query_metrics(run, qrels, [k], relevance_threshold=relevance_threshold, gain=gain, metrics=metrics)
    values = values[values["k"] == k]
    by_metric = {}
    for metric in metrics:
        rows = values[values["metric"] == metric]
        by_metric[metric] = pd.Series(rows["value"].to_numpy(), index=rows["qid"].to_numpy())
    return by_metric


Verdict = tuple[list[str], dict[str, int]]


def verdicts(wides: Sequence[pd.DataFrame], baseline: str | None, alpha: float, seed: int) -> list[Verdict]:
    """Per wide table: methods by mean (best first, ties by name) and each method's mark against the baseline: +1 or
    -1 when significant after Holm (randomization test), 0 otherwise.

    A row's randomization p-value does not depend on the other rows, so the tables over the same number of
    questions are tested in one call: the seeded sign flips are drawn once for all of them."""
    rankings: list[list[str]] = []
    tested: dict[int, tuple[list[str], np.ndarray]] = {}  # table -> methods against the baseline, differences
    for i, wide in enumerate(wides):
        means = wide.mean()
        rankings.append(sorted(wide.columns, key=lambda m: (-means[m], m)))
        if baseline in wide.columns:
            others = [m for m in wide.columns if m != baseline]
            tested[i] = others, wide[others].to_numpy().T - wide[baseline].to_numpy()
    p_values: dict[int, np.ndarray] = {}
    for n in sorted({d.shape[1] for _, d in tested.values()}):
        members = [i for i, (_, d) in tested.items() if d.shape[1] == n]
        stacked = randomization_p_values(np.concatenate([tested[i][1] for i in members]), n_resamples=RESAMPLES,
                                         seed=seed)
        p_values |= dict(zip(members, np.split(stacked, np.cumsum([len(tested[i][1]) for i in members])[:-1])))
    results: list[Verdict] = []
    for i, ranking in enumerate(rankings):
        if i not in tested:
            results.append((ranking, {}))
            continue
        (names, d), p = tested[i], holm(p_values[i])
        results.append((ranking, {m: int(np.sign(row.mean())) if q < alpha else 0 for m, row, q in zip(names, d, p)}))
    return results


def kendall_tau(positions: Sequence[int]) -> float:
    """Kendall's tau between 0, 1, ..., n-1 and a permutation of them (n >= 2), in scipy.stats.kendalltau's
    arithmetic (its tau-b without ties), without scipy.stats's import (0.6 CPU s of a job)."""
    order = np.asarray(positions)
    total = len(order) * (len(order) - 1) // 2
    discordant = int(np.triu(order[:, None] > order[None, :], 1).sum())
    tau = (total - 2 * discordant) / np.sqrt(total) / np.sqrt(total)
    return float(np.minimum(1.0, max(-1.0, tau)))


def outcome(wide: pd.DataFrame, perturbed: Verdict, original: Verdict) -> tuple[bool, float, int, int]:
    """One perturbed scoring (its table and verdict) against the original verdict: is the best still best (ties
    count), Kendall's tau of the rankings, how many marks are unchanged and out of how many."""
    ranking, marks = perturbed
    ranking0, marks0 = original
    tau = (kendall_tau([ranking.index(m) for m in ranking0])
           if len(ranking0) > 1 else 1.0)  # one method: its ranking cannot change
    means = wide.mean()
    still_best = means[ranking0[0]] >= means.max() - TIE_TOLERANCE
    return bool(still_best), float(tau), sum(marks[m] == marks0[m] for m in marks0), len(marks0)


def survival_rows(outcomes: Mapping[tuple[str, int], list[tuple[bool, float, int, int]]],
                  verdicts: Mapping[tuple[str, int], Verdict], grain: str, name: str,
                  level: float) -> list[dict]:
    """SURVIVAL_COLUMNS (but dataset, qset) of one perturbation, one row per headline metric."""
    rows = []
    for (metric, k), results in outcomes.items():
        kept, total = sum(o[2] for o in results), sum(o[3] for o in results)
        rows.append({"grain": grain, "metric": metric, "k": k, "perturbation": name, "level": level,
                     "repetitions": len(results), "best": verdicts[(metric, k)][0][0],
                     "best_survives": float(np.mean([o[0] for o in results])),
                     "tau_mean": float(np.mean([o[1] for o in results])),
                     "tau_min": float(np.min([o[1] for o in results])),
                     "marks": int(np.count_nonzero(list(verdicts[(metric, k)][1].values()))),
                     "marks_survive": kept / total if total else np.nan})
    return rows


def at_grain(runs: Mapping[str, pd.DataFrame], qrels: Mapping[str, pd.DataFrame], grain: str
             ) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Each method's run and qrels at one grain (items as item_id), methods in name order."""
    grain_runs = {m: _grain_runs(run, [grain])[grain][["qid", "item_id", "rank", "score"]]
                  for m, run in sorted(runs.items())}
    return grain_runs, {m: _grain_qrels(qrels[m], grain).sort_values(["qid", "item_id"], ignore_index=True)
                        for m in grain_runs}


def _categorical_ids(runs: Mapping[str, pd.DataFrame], qrels: Mapping[str, pd.DataFrame]
                     ) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Runs and qrels with qid and item_id as categoricals of one shared vocabulary each: the metric code then
    reads the ids' codes instead of hashing every run's million ids again for each of the many perturbed scorings."""
    frames = list(runs.values()) + list(qrels.values())
    types = {column: pd.CategoricalDtype(pd.unique(pd.concat([frame[column] for frame in frames]).dropna()))
             for column in ("qid", "item_id")}
    return ({m: frame.astype(types) for m, frame in runs.items()},
            {m: frame.astype(types) for m, frame in qrels.items()})


def robustness(runs: Mapping[str, pd.DataFrame], qrels: Mapping[str, pd.DataFrame], grain: str,
               headline: Sequence[tuple[str, int]], baseline: str | None, alpha: float, relevance_threshold: int,
               gain: str, seed: int, repetitions: int = REPETITIONS,
               perturbations: Sequence[tuple[str, float]] = PERTURBATIONS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Survival of the verdict under label perturbations (SURVIVAL_COLUMNS but dataset, qset) and each method's
    metric bounds for its unjudged items (BOUNDS_COLUMNS but dataset, qset), at one grain, over all questions.

    runs and qrels per method (each method's own chunker's qrels). Repetition r of every perturbation draws from
    the seed (seed, perturbation index, r), the same for every method's qrels, so equal qrels get equal noise.
    """
    grain_runs, base = _categorical_ids(*at_grain(runs, qrels, grain))
    deepest = max(k for _, k in headline)  # the unjudged items any headline metric reads
    reference = scores(grain_runs, base, headline, relevance_threshold, gain)
    perturb = {"drop labels": drop_labels, "shift grades": shift_grades}
    # every scoring first (reference, then each perturbation's repetitions), then all their verdicts at once
    scored = [list(reference.items())]
    for index, (name, level) in enumerate(perturbations):
        for r in range(repetitions):
            noisy = {m: perturb[name](frame, level, np.random.default_rng([seed, index, r])) for m, frame in
                     base.items()}
            scored.append(list(scores(grain_runs, noisy, headline, relevance_threshold, gain).items()))
    judged = iter(verdicts([wide for scoring in scored for _, wide in scoring], baseline, alpha, seed))
    found = [[next(judged) for _ in scoring] for scoring in scored]
    original = dict(zip(reference, found[0]))
    rows = []
    for index, (name, level) in enumerate(perturbations):
        outcomes: dict[tuple[str, int], list[tuple[bool, float, int, int]]] = {key: [] for key in original}
        for r in range(repetitions):
            at = 1 + index * repetitions + r
            for (key, wide), perturbed in zip(scored[at], found[at]):
                outcomes[key].append(outcome(wide, perturbed, original[key]))
        rows += survival_rows(outcomes, original, grain, name, level)
    pooled = pool(grain_runs, deepest)
    # per method and k: the bounded metrics' values under its lower and upper bounding qrels, scored together
    at_k = {k: sorted({m for m, cut in headline if cut == k and m in POOL_BOUNDED_METRICS})
            for _, k in headline if k > 0}
    limits = {}
    for method, run in grain_runs.items():
        for k, metrics in at_k.items():
            if metrics:
                low, high = bounding_qrels(run, base[method], pooled, k, relevance_threshold)
                limits[method, k] = [_method_scores(run, judged, metrics, k, relevance_threshold, gain)
                                     for judged in (low, high)]
    shares = {(method, k): unjudged_share(run, base[method], k) for method, run in grain_runs.items()
              for k in {k for _, k in headline}}
    bounds = []
    for metric, k in headline:
        bounded = metric in POOL_BOUNDED_METRICS and k > 0
        for method in grain_runs:
            lower = upper = np.nan
            if bounded:
                index = reference[(metric, k)].index
                lower, upper = (float(values[metric].reindex(index, fill_value=0.0).mean())
                                for values in limits[method, k])
            bounds.append({"grain": grain, "metric": metric, "k": k, "method": method,
                           "unjudged_share": shares[method, k],
                           "reported": float(reference[(metric, k)][method].mean()), "lower": lower, "upper": upper})
    return pd.DataFrame(rows), pd.DataFrame(bounds)


def judge_items(judgements: pd.DataFrame, grain: str) -> pd.DataFrame:
    """The LLM judge's grades (llm/judgements.parquet) as qrels of one grain: a document takes the best grade of its
    judged chunks; unparsable grades are left out."""
    judged = judgements[judgements["judge"].notna()]
    item = "chunk_id" if grain == "chunk" else "doc_id"
    frame = judged.rename(columns={item: "item_id"}).groupby(["qid", "item_id"], as_index=False)["judge"].max()
    return frame.rename(columns={"judge": "grade"}).astype({"grade": np.int64})


def swap_in_judge(qrels: pd.DataFrame, judged: pd.DataFrame) -> pd.DataFrame:
    """People's qrels with the judge's grade in place of theirs on every item it graded (and its items people left
    unlabelled added), on the questions people labelled."""
    judged = judged[judged["qid"].isin(qrels["qid"])]
    kept = qrels.merge(judged[["qid", "item_id"]], how="left", indicator=True)
    kept = kept[kept["_merge"] == "left_only"].drop(columns="_merge")
    return pd.concat([kept, judged[kept.columns]], ignore_index=True).sort_values(["qid", "item_id"],
                                                                                 ignore_index=True)


def fully_labelled(qrels: pd.DataFrame, judged: pd.DataFrame) -> pd.Index:
    """Questions whose every judged item people also graded: their human metric values are exact on the pool."""
    missing = judged.merge(qrels[["qid", "item_id"]], how="left", indicator=True)
    incomplete = set(missing.loc[missing["_merge"] == "left_only", "qid"])
    return pd.Index(sorted(set(qrels["qid"]) - incomplete))


def judge_effects(runs: Mapping[str, pd.DataFrame], qrels: Mapping[str, pd.DataFrame], judgements: pd.DataFrame,
                  grain: str, headline: Sequence[tuple[str, int]], baseline: str | None, alpha: float,
                  relevance_threshold: int, gain: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the LLM judge's labels do to the verdict: the survival row of swapping them in for people's (one
    repetition, the same questions as the tables) and the judge-corrected metrics (CORRECTED_COLUMNS but dataset,
    qset): human-only, judge-only and PPI++ per headline metric and method, at one grain."""
    grain_runs, base = at_grain(runs, qrels, grain)
    judged = judge_items(judgements, grain)
    swapped = {m: swap_in_judge(frame, judged) for m, frame in base.items()}
    reference = scores(grain_runs, base, headline, relevance_threshold, gain)
    llm = scores(grain_runs, swapped, headline, relevance_threshold, gain)
    llm = {key: wide.reindex(reference[key].index).fillna(0.0) for key, wide in llm.items()}
    found = verdicts(list(reference.values()) + [llm[key] for key in reference], baseline, alpha, seed)
    original = dict(zip(reference, found[:len(reference)]))
    outcomes = {key: [outcome(llm[key], perturbed, original[key])] for key, perturbed in
                zip(reference, found[len(reference):])}
    labels = pd.concat(base.values()).drop_duplicates(["qid", "item_id"])
    regraded = labels.merge(judged, on=["qid", "item_id"], suffixes=("", "_judge"))
    level = float((regraded["grade"] != regraded["grade_judge"]).sum() / len(labels)) if len(labels) else 0.0
    survival = pd.DataFrame(survival_rows(outcomes, original, grain, "LLM labels", level))
    labelled = {m: fully_labelled(frame, judged) for m, frame in base.items()}
    corrected = [judge_corrected(reference[key], llm[key], labelled).assign(grain=grain, metric=key[0], k=key[1])
                 for key in reference]
    return survival, pd.concat(corrected, ignore_index=True)
