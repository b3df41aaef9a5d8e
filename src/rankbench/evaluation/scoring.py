"""From labels and runs to per-query metrics at chunk and document grain, and their tidy aggregate."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rankbench.evaluation.metrics import (
    EXTRA_METRICS_AT_K,
    EXTRA_METRICS_FULL,
    METRICS_AT_K,
    METRICS_FULL,
    POLLUTION_METRICS,
    grade_labels,
    grades_by_rank,
    per_query_metrics,
)
from rankbench.evaluation.stats import (
    COMPARISON_COLUMNS,
    bootstrap_ci,
    equivalence_p_values,
    holm,
    method_pairs,
    noninferiority_p_values,
    paired_comparison,
    rank_intervals,
    tiers,
)
from rankbench.io.ranked_lists import collapse_to_documents

GRAINS = ("document", "chunk")
ALL_KINDS = "all"


def question_kinds(aggregate: pd.DataFrame) -> list[str]:
    """The question kinds an aggregate has rows for, sorted, without the all-questions rows: with fewer than two,
    every per-kind view repeats the all-questions one (the pages then leave it out)."""
    return sorted(set(aggregate["kind"]) - {ALL_KINDS})


PER_QUERY_COLUMNS = ["qid", "kind", "grain", "metric", "k", "value"]
# Against the configured baseline (NaN on the baseline's own rows and without a baseline): diff = method -
# baseline with its bootstrap CI, the standardized effect d_z with its CI, p-values (p_holm: Holm over the
# non-baseline methods of one grain, kind, metric, k), wins/ties/losses of the method, and whether one question
# alone accounts for diff.
BASELINE_COLUMNS = ["baseline", "diff", "diff_low", "diff_high", "d_z", "d_z_low", "d_z_high", "p_randomization", "p_t",
                    "p_holm", "wins", "ties", "losses", "below_one_question"]
BASELINE_DTYPES = {"baseline": object, "diff": np.float64, "diff_low": np.float64, "diff_high": np.float64,
                   "d_z": np.float64, "d_z_low": np.float64, "d_z_high": np.float64,
                   "p_randomization": np.float64, "p_t": np.float64, "p_holm": np.float64, "wins": "Int64",
                   "ties": "Int64", "losses": "Int64", "below_one_question": "boolean"}
AGGREGATE_COLUMNS = ["dataset", "qset", "method", "grain", "kind", "metric", "k", "mean", "ci_low", "ci_high",
                     "n", "n_excluded"] + BASELINE_COLUMNS
# Beside the superiority tests, at the metric's margin δ (evaluation.margin; NaN without one): one-sided
# non-inferiority p of method_a no worse than method_b by more than δ, of method_b no worse than method_a, and the
# TOST equivalence p (|diff| < δ); raw p, Holm is the reader's (over the family the finding speaks for).
MARGIN_COLUMNS = ["margin", "p_noninferior_a", "p_noninferior_b", "p_equivalent"]
PAIRS_COLUMNS = ["dataset", "qset", "grain", "kind", "metric", "k"] + list(COMPARISON_COLUMNS) + MARGIN_COLUMNS
GRADES_COLUMNS = ["grain", "kind", "rank", "grade", "count", "share", "n"]
# Per headline metric, grain and kind: the method's tier (a = not significantly worse than the best, Holm over the
# pairs with the best; b = the same among the rest, ...), its rank by mean and the 95% bootstrap interval of that
# rank over the n questions every method evaluates.
TIERS_COLUMNS = ["dataset", "qset", "method", "grain", "kind", "metric", "k", "mean", "tier", "rank", "rank_low",
                 "rank_high", "n"]


def dictionary_coded(run: pd.DataFrame, qrels: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run and the labels with their ids as categoricals: one vocabulary of question ids, one of item ids (chunk
    ids, document ids and labelled ids together), each hashed once, so that every grain and metric reads codes
    instead of hashing the strings again. The values are unchanged."""
    questions = _categoricals([run["qid"], qrels["qid"]])
    items = _categoricals([run["chunk_id"], run["doc_id"], qrels["item_id"]])
    return (run.assign(qid=questions[0], chunk_id=items[0], doc_id=items[1]),
            qrels.assign(qid=questions[1], item_id=items[2]))


def _categoricals(columns: Sequence[pd.Series]) -> list[pd.Series]:
    """Id columns as categoricals of one shared dtype (their values as strings, first-seen category order)."""
    strings = [c if pd.api.types.is_string_dtype(c) else c.astype(str) for c in columns]
    codes, uniques = pd.factorize(pd.concat(strings, ignore_index=True))
    dtype = pd.CategoricalDtype(pd.Index(uniques))
    bounds = np.cumsum([0] + [len(c) for c in columns])
    return [pd.Series(pd.Categorical.from_codes(codes[a:b], dtype=dtype), index=c.index, name=c.name)
            for a, b, c in zip(bounds[:-1], bounds[1:], columns)]


def _grain_runs(run: pd.DataFrame, grains: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The run at each grain with its ranked id as item_id (document grain: chunks collapsed to documents)."""
    unknown = sorted(set(grains) - set(GRAINS))
    if unknown:
        raise ValueError(f"unknown grain(s) {unknown}; known: {list(GRAINS)}")
    ids = {"chunk": "chunk_id", "document": "doc_id"}
    return {grain: (run if grain == "chunk" else collapse_to_documents(run))
            .assign(item_id=lambda f, g=grain: f[ids[g]]) for grain in grains}


def _grain_qrels(qrels: pd.DataFrame, grain: str) -> pd.DataFrame:
    return qrels.loc[qrels["grain"] == grain, ["qid", "item_id", "grade"]]


def evaluate_run(run: pd.DataFrame, questions: pd.DataFrame, qrels: pd.DataFrame, ks: Sequence[int],
                 relevance_threshold: int = 1, gain: str = "linear", grains: Sequence[str] = GRAINS,
                 extra_metrics: Sequence[str] = (), rbp_p: float = 0.8) -> pd.DataFrame:
    """Per-query metrics of one run at each grain, with each question's kind; unanswerable questions left out.

    Chunk grain adds the pollution metrics (distinct documents, top document's share) for the questions it evaluates;
    extra_metrics adds metrics computed only on request (EXTRA_METRICS_AT_K, EXTRA_METRICS_FULL: bpref, RBP, ...).
    """
    unknown = sorted(set(extra_metrics) - set(EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL))
    if unknown:
        raise ValueError(f"unknown extra metric(s) {unknown}; known: {list(EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL)}")
    frames = []
    for grain, grain_run in _grain_runs(run, grains).items():
        columns, metrics = ["qid", "item_id", "rank", "score"], list(METRICS_AT_K + METRICS_FULL) + list(extra_metrics)
        if grain == "chunk":
            columns, metrics = columns + ["doc_id"], metrics + list(POLLUTION_METRICS)
        values = per_query_metrics(grain_run[columns], _grain_qrels(qrels, grain), ks,
                                   relevance_threshold=relevance_threshold, gain=gain, metrics=metrics, rbp_p=rbp_p)
        frames.append(values.assign(grain=grain))
    per_query = pd.concat(frames, ignore_index=True).merge(questions[["qid", "kind"]], on="qid", how="left")
    return per_query.sort_values(["grain", "qid", "metric", "k"], ignore_index=True)[PER_QUERY_COLUMNS]


def grade_distribution(run: pd.DataFrame, questions: pd.DataFrame, qrels: pd.DataFrame, k: int,
                       relevance_threshold: int = 1, grains: Sequence[str] = GRAINS) -> pd.DataFrame:
    """Share of each grade (0..3 and any other grade the qrels hold, unjudged, none retrieved) at each rank 1..k,
    per grain and kind (incl. 'all').

    Over the questions the metrics evaluate (with a relevant label); shares at one rank sum to 1.
    """
    rows = []
    for grain, grain_run in _grain_runs(run, grains).items():
        qids, codes = grades_by_rank(grain_run[["qid", "item_id", "rank", "score"]], _grain_qrels(qrels, grain),
                                     k, relevance_threshold=relevance_threshold)
        labels = grade_labels(_grain_qrels(qrels, grain))
        kinds = qids.map(questions.set_index("qid")["kind"]).to_numpy(dtype=object)
        for kind in [ALL_KINDS] + sorted(set(kinds.tolist())):
            selected = codes if kind == ALL_KINDS else codes[kinds == kind]
            counts = np.stack([(selected == code).sum(axis=0) for code in range(len(labels))])
            rows.append(pd.DataFrame({
                "grain": grain, "kind": kind,
                "rank": np.repeat(np.arange(1, codes.shape[1] + 1), len(labels)),
                "grade": np.tile(np.array(labels, dtype=object), codes.shape[1]),
                "count": counts.T.reshape(-1).astype(np.int64), "n": len(selected),
            }))
    table = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=GRADES_COLUMNS)
    table["share"] = table["count"] / table["n"].where(table["n"] > 0)
    return table[GRADES_COLUMNS]


def _baseline_view(pairs: pd.DataFrame, by: Sequence[str], baseline: str) -> pd.DataFrame:
    """The baseline pairs seen from the other method: diff = method - baseline, Holm over that family."""
    view = pairs[pairs["is_baseline_pair"]].copy()
    # 0.0 - x, not -x: a difference of 0 stays 0.0 instead of becoming -0.0 (printed "-0.0000")
    view = view.assign(method=view["method_b"], baseline=baseline, diff=0.0 - view["diff"],
                       diff_low=0.0 - view["diff_high"], diff_high=0.0 - view["diff_low"], d_z=0.0 - view["d_z"],
                       d_z_low=0.0 - view["d_z_high"], d_z_high=0.0 - view["d_z_low"], wins=view["losses"],
                       losses=view["wins"])
    family = list(by) + ["metric", "k"]
    view["p_holm"] = view.groupby(family, sort=False)["p_randomization"].transform(lambda p: holm(p.to_numpy()))
    return view[["method"] + family + BASELINE_COLUMNS]


def _margin_tests(differences: np.ndarray, margins: np.ndarray) -> dict[str, np.ndarray]:
    """MARGIN_COLUMNS of each row of [rows, n_queries] differences a - b at its margin (NaN where there is none)."""
    has = ~np.isnan(margins)
    columns = {name: np.full(len(margins), np.nan) for name in MARGIN_COLUMNS}
    columns["margin"] = margins
    if has.any():
        d = differences[has]
        columns["p_noninferior_a"][has] = noninferiority_p_values(d, margins[has])
        columns["p_noninferior_b"][has] = noninferiority_p_values(0.0 - d, margins[has])
        columns["p_equivalent"][has] = equivalence_p_values(d, margins[has])
    return columns


def summarize(per_query: pd.DataFrame, by: Sequence[str], baseline: str | None, n_resamples: int = 10_000,
              seed: int = 0, margins: Mapping[tuple[str, int], float] | None = None,
              every_pair: Collection[tuple[str, int]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Means with bootstrap CIs, and every pair of methods compared, per (by..., metric, k) of a long table.

    ``per_query`` has columns method, qid, metric, k, value and the ``by`` columns. Returns the summary (one row
    per method, by..., metric, k: mean, ci_low, ci_high, n and, against the baseline, BASELINE_COLUMNS) and the
    pairs (one row per pair of methods, COMPARISON_COLUMNS; p_holm over all pairs of one (by..., metric, k)).
    A pair is compared on the questions both methods evaluate; resamples depend on the seed and the questions
    only, so all pairs over the same questions are computed in one vectorized call. ``margins`` maps a (metric, k) to
    its non-inferiority margin δ (MARGIN_COLUMNS; NaN for the others).

    ``every_pair``: the (metric, k) at which every pair of methods is compared (None: every metric); at the others
    only the pairs with the baseline are (what the baseline columns read). Each pair is a paired test with its
    bootstrap, so all pairs at every metric grow with the square of the methods: a 20-method grid spent more in
    them than in its retrieval, for pairs no page reads.
    """
    margins = margins or {}
    means, pairs = [], []
    keys = list(by) + ["metric", "k"]
    grouped = per_query.groupby(list(by), sort=True) if by else [((), per_query)]
    for group_key, group in grouped:
        labels = dict(zip(by, group_key if isinstance(group_key, tuple) else (group_key,)))
        wide = group.set_index(["method", "metric", "k", "qid"])["value"].unstack("qid")
        methods = sorted(wide.index.get_level_values("method").unique())
        metric_index = wide.index.droplevel("method").unique().sort_values()
        cube = np.stack([wide.loc[m].reindex(metric_index).to_numpy(dtype=np.float64) for m in methods])
        present = ~np.isnan(cube).all(axis=1)  # [method, question]
        for mask, members in _batches({i: present[i] for i in range(len(methods))}):
            values = cube[members][:, :, mask]
            low, high = bootstrap_ci(values.reshape(-1, values.shape[-1]), n_resamples=n_resamples, seed=seed)
            for j, m in enumerate(members):
                means.append(pd.DataFrame({"method": methods[m], **labels, "metric": metric_index.get_level_values(0),
                                           "k": metric_index.get_level_values(1), "mean": values[j].mean(axis=1),
                                           "ci_low": low.reshape(values.shape[:2])[j],
                                           "ci_high": high.reshape(values.shape[:2])[j], "n": int(mask.sum())}))
        pair_list = method_pairs(methods, baseline if baseline in methods else None)
        index = {name: i for i, name in enumerate(methods)}
        common = {p: present[index[p[0]]] & present[index[p[1]]] for p in pair_list}
        every_row = np.arange(len(metric_index))
        pair_rows = every_row if every_pair is None else np.flatnonzero(
            [(m, int(k)) in every_pair for m, k in metric_index])
        for mask, members in _batches(common):
            frames = []
            with_baseline = [pair for pair in members if pair[2]]
            others = [pair for pair in members if not pair[2]]
            for rows, group in ((every_row, with_baseline), (pair_rows, others)):
                if not group or not len(rows):
                    continue
                cut = metric_index[rows]
                a = np.concatenate([cube[index[x]][rows][:, mask] for x, _, _ in group])
                b = np.concatenate([cube[index[y]][rows][:, mask] for _, y, _ in group])
                result = paired_comparison(a, b, n_resamples=n_resamples, seed=seed)
                result.update(_margin_tests(a - b, np.tile([margins.get((m, int(k)), np.nan) for m, k in cut],
                                                           len(group))))
                frames.append(pd.DataFrame({
                    **labels,
                    "metric": np.tile(cut.get_level_values(0), len(group)),
                    "k": np.tile(cut.get_level_values(1), len(group)),
                    "method_a": np.repeat([x for x, _, _ in group], len(rows)),
                    "method_b": np.repeat([y for _, y, _ in group], len(rows)),
                    "mean_a": a.mean(axis=1), "mean_b": b.mean(axis=1), **result, "n": int(mask.sum()),
                    "is_baseline_pair": np.repeat([flag for _, _, flag in group], len(rows)),
                    "order": np.repeat([members.index(pair) for pair in group], len(rows)),
                }))
            if frames:  # the batch's pairs in their order (method_pairs'), whichever metrics each is compared at
                pairs.append(pd.concat(frames, ignore_index=True).sort_values("order", kind="stable"))
    summary = pd.concat(means, ignore_index=True) if means else pd.DataFrame(columns=["method"] + keys)
    pair_table = (pd.concat(pairs, ignore_index=True) if pairs
                  else pd.DataFrame(columns=keys + list(COMPARISON_COLUMNS) + MARGIN_COLUMNS))
    pair_table["p_holm"] = (pair_table.groupby(keys, sort=False)["p_randomization"]
                            .transform(lambda p: holm(p.to_numpy())) if len(pair_table) else [])
    pair_table = pair_table[keys + list(COMPARISON_COLUMNS) + MARGIN_COLUMNS].sort_values(keys, kind="stable",
                                                                                          ignore_index=True)
    if baseline is not None and len(pair_table):
        summary = summary.merge(_baseline_view(pair_table, by, baseline), on=["method"] + keys, how="left")
    for column in BASELINE_COLUMNS:
        if column not in summary:
            summary[column] = np.nan
    summary = summary.assign(baseline=baseline).astype(BASELINE_DTYPES)
    return summary.sort_values(["method"] + keys, ignore_index=True), pair_table


def _batches(masks: Mapping[Any, np.ndarray]) -> list[tuple[np.ndarray, list]]:
    """Keys grouped by their boolean mask (the questions they are computed on), in first-seen order."""
    grouped: dict[bytes, tuple[np.ndarray, list]] = {}
    for key, mask in masks.items():
        grouped.setdefault(mask.tobytes(), (mask, []))[1].append(key)
    return list(grouped.values())


def aggregate(per_query: Mapping[str, pd.DataFrame], questions: pd.DataFrame, dataset: str, qset: str,
              n_resamples: int = 10_000, seed: int = 0, baseline: str | None = None,
              margins: Mapping[tuple[str, int], float] | None = None,
              every_pair: Collection[tuple[str, int]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tidy aggregate (AGGREGATE_COLUMNS) and the pairs of methods (PAIRS_COLUMNS, with the margin tests of the
    metrics `margins` names), per (grain, kind incl. 'all'): every pair at the (metric, k) of `every_pair` (None:
    at every metric), the pairs with the baseline at the others (summarize)."""
    kind_sizes = questions["kind"].value_counts().to_dict()
    kind_sizes[ALL_KINDS] = len(questions)
    long = pd.concat([frame.assign(method=method) for method, frame in sorted(per_query.items())], ignore_index=True)
    long = pd.concat([long.assign(kind=ALL_KINDS), long], ignore_index=True)
    summary, pairs = summarize(long, ["grain", "kind"], baseline, n_resamples=n_resamples, seed=seed, margins=margins,
                               every_pair=every_pair)
    summary = summary.assign(dataset=dataset, qset=qset,
                             n_excluded=summary["kind"].map(kind_sizes).fillna(0).astype(np.int64) - summary["n"])
    return summary[AGGREGATE_COLUMNS], pairs.assign(dataset=dataset, qset=qset)[PAIRS_COLUMNS]


BREAKDOWN_FIELDS = ("tags", "difficulty")
# Most groups of one breakdown (tags, difficulties, kinds) a page shows and the aggregate computes: the largest ones.
# Each group costs its bootstrap and a column; 10,000 distinct tags on 12 questions kept the jobs busy for many
# minutes for a table nobody reads.
MAX_GROUPS = 30


def largest_groups(sizes: Mapping[str, int], limit: int = MAX_GROUPS) -> list[str]:
    """The `limit` groups with the most questions (group -> questions), ties by name: the groups a breakdown shows."""
    return sorted(sorted(sizes, key=lambda group: (-sizes[group], str(group)))[:limit], key=str)


def breakdown_groups(questions: pd.DataFrame) -> pd.DataFrame:
    """qid, breakdown (a BREAKDOWN_FIELDS name), group: each question under each of its tags and its difficulty (no
    row for a question without them; empty when the questions have neither field, as BEIR and TREC sets)."""
    frames = []
    if "tags" in questions:
        tagged = questions[["qid", "tags"]].explode("tags").dropna(subset=["tags"])
        frames.append(pd.DataFrame({"qid": tagged["qid"], "breakdown": "tags", "group": tagged["tags"]}))
    if "difficulty" in questions:
        rated = questions[questions["difficulty"].notna()]
        frames.append(pd.DataFrame({"qid": rated["qid"], "breakdown": "difficulty", "group": rated["difficulty"]}))
    groups = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["qid", "breakdown", "group"])
    return groups.astype({"qid": object, "breakdown": object, "group": object}).reset_index(drop=True)


def breakdown_aggregate(per_query: Mapping[str, pd.DataFrame], questions: pd.DataFrame, dataset: str, qset: str,
                        n_resamples: int = 10_000, seed: int = 0, baseline: str | None = None) -> pd.DataFrame:
    """The aggregate per tag and per difficulty: AGGREGATE_COLUMNS plus `breakdown` (tags or difficulty), `kind`
    holding the group (a tag, a difficulty), computed as the per-kind rows are, for the MAX_GROUPS largest groups of
    each breakdown (largest_groups); empty without tags and difficulty."""
    groups = breakdown_groups(questions)
    if not len(groups):
        return pd.DataFrame(columns=["breakdown"] + AGGREGATE_COLUMNS)
    shown = [(field, group) for field, rows in groups.groupby("breakdown", sort=True)
             for group in largest_groups(rows["group"].value_counts().to_dict())]
    groups = groups[pd.MultiIndex.from_frame(groups[["breakdown", "group"]]).isin(shown)]
    long = pd.concat([frame.drop(columns="kind").assign(method=method) for method, frame in sorted(per_query.items())],
                     ignore_index=True).merge(groups.rename(columns={"group": "kind"}), on="qid")
    # the baseline columns only: no pair but those with the baseline is read
    summary, _ = summarize(long, ["breakdown", "grain", "kind"], baseline, n_resamples=n_resamples, seed=seed,
                           every_pair=())
    sizes = groups.groupby(["breakdown", "group"]).size()
    n_all = [int(sizes.get((b, g), 0)) for b, g in zip(summary["breakdown"], summary["kind"])]
    summary = summary.assign(dataset=dataset, qset=qset, n_excluded=np.asarray(n_all, dtype=np.int64) - summary["n"])
    return summary[["breakdown"] + AGGREGATE_COLUMNS]


def tier_table(per_query: Mapping[str, pd.DataFrame], summary: pd.DataFrame, pairs: pd.DataFrame,
               metrics: Sequence[tuple[str, int]], alpha: float, n_resamples: int = 10_000, seed: int = 0
               ) -> pd.DataFrame:
    """Tiers and rank intervals (TIERS_COLUMNS but dataset, qset) of the given (metric, k), per grain and kind (incl.
    'all'), from the per-query values, the aggregate's means and the pairs' randomization p-values.

    Ranks are over the questions every method of the grain evaluates (n); without such questions they are null.
    """
    wanted = pd.DataFrame([(m, int(k)) for m, k in metrics], columns=["metric", "k"]).drop_duplicates()
    long = pd.concat([frame.assign(method=method) for method, frame in sorted(per_query.items())], ignore_index=True)
    long = pd.concat([long.assign(kind=ALL_KINDS), long], ignore_index=True).merge(wanted, on=["metric", "k"])
    means = summary.set_index(["grain", "kind", "metric", "k", "method"])["mean"]
    keys = ["grain", "kind", "metric", "k"]
    p_values = {key: {frozenset(pair): p for *pair, p in group[["method_a", "method_b", "p_randomization"]]
                      .itertuples(index=False)}
                for key, group in pairs.merge(wanted, on=["metric", "k"]).groupby(keys)}
    rows = []
    for (grain, kind), group in long.groupby(["grain", "kind"], sort=True):
        methods = sorted(group["method"].unique())
        wide = group.set_index(["metric", "k", "method", "qid"])["value"].unstack("qid")
        cuts = sorted(set(zip(group["metric"], group["k"].astype(int))))
        cube = np.stack([wide.reindex(pd.MultiIndex.from_tuples([(m, k, x) for x in methods])).to_numpy(
            dtype=np.float64) for m, k in cuts])  # [metric, method, question]
        common = ~np.isnan(cube).any(axis=(0, 1))
        rank = low = high = np.full((len(cuts), len(methods)), pd.NA)
        if common.any():
            rank, low, high = rank_intervals(cube[:, :, common], n_resamples=n_resamples, seed=seed)
        for i, (metric, k) in enumerate(cuts):
            method_means = {x: float(means[(grain, kind, metric, k, x)]) for x in methods}
            letters = tiers(method_means, p_values.get((grain, kind, metric, k), {}), alpha)
            rows.append(pd.DataFrame({
                "method": methods, "grain": grain, "kind": kind, "metric": metric, "k": k,
                "mean": [method_means[x] for x in methods], "tier": [letters[x] for x in methods],
                "rank": pd.array(rank[i], dtype="Int64"), "rank_low": pd.array(low[i], dtype="Int64"),
                "rank_high": pd.array(high[i], dtype="Int64"), "n": int(common.sum())}))
    columns = TIERS_COLUMNS[2:]
    table = pd.concat(rows, ignore_index=True)[columns] if rows else pd.DataFrame(columns=columns)
    return table.sort_values(["grain", "kind", "metric", "k", "tier", "mean", "method"],
                             ascending=[True, True, True, True, True, False, True], ignore_index=True)


def runs_per_query(runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame, metrics: Sequence[tuple[str, int]],
                   grain: str = "document", relevance_threshold: int = 1, gain: str = "linear", rbp_p: float = 0.8
                   ) -> pd.DataFrame:
    """Per-query values (method, qid, metric, k, value) of runs (RUN_COLUMNS) against one grain's qrels (qid, item_id,
    grade), outside the workflow, for the requested (metric, k) pairs only.

    k = 0 asks for a cutoff metric over the whole run (trec_eval's uncut map, recip_rank, ndcg).
    """
    ks = sorted({k for _, k in metrics if k > 0}) or [1]
    uncut = [m for m, k in metrics if k == 0 and m in METRICS_AT_K]
    extra = sorted({m for m, _ in metrics if m in EXTRA_METRICS_AT_K + EXTRA_METRICS_FULL})
    questions = pd.DataFrame({"qid": pd.unique(qrels["qid"]), "kind": ALL_KINDS})
    grain_qrels = qrels.assign(grain=grain)
    wanted = pd.DataFrame(list(metrics), columns=["metric", "k"]).drop_duplicates()
    frames = []
    for method, run in runs.items():
        values = evaluate_run(run, questions, grain_qrels, ks, relevance_threshold, gain, grains=[grain],
                              extra_metrics=extra, rbp_p=rbp_p)
        if uncut:  # a cutoff beyond every question's results and labels cuts nothing
            whole = evaluate_run(run, questions, grain_qrels, [len(run) + len(qrels) + 1], relevance_threshold, gain,
                                 grains=[grain])
            values = pd.concat([values, whole[whole["metric"].isin(uncut)].assign(k=0)], ignore_index=True)
        frames.append(values.merge(wanted, on=["metric", "k"]).assign(method=method))
    return pd.concat(frames, ignore_index=True)[["method", "qid", "metric", "k", "value"]]
