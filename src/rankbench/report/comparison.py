"""The comparison page of one question-set version: the answer and what to do first, then the headline table,
findings, full tables per grain and per kind, label findings, provenance and the exact config."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from rankbench.analysis.frontier import cheapest_as_good
from rankbench.evaluation.metric_names import POLLUTION_METRICS, metric_label
from rankbench.evaluation.scoring import ALL_KINDS, question_kinds
from rankbench.io.audience import audience_line
from rankbench.io.markdown import markdown_grid, markdown_literal
from rankbench.report.breakdowns import kind_section
from rankbench.report.chunking import chunking_section
from rankbench.report.decision import answer_lines, decision_lines, what_to_do_lines
from rankbench.report.findings import findings
from rankbench.report.headline_marks import (
    comparison_family,
    family_legend,
    footnote_lines,
    headline_grid,
    with_tooltips,
)
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.run_pages import with_section
from rankbench.report.serving import served_section
from rankbench.report.tables import (
    MIN_GROUP,
    POLLUTION_LEGEND,
    TIERS_LEGEND,
    csv_table,
    latex_table,
    legend,
    marked,
    megabytes,
    near_best,
    table_metrics,
    tier_grid,
    wide,
    with_tiers,
)

DATE_PREFIX = "- date: "
HOW_SURE = ("How sure is this table: the [budget page](budget.html) says how many questions would separate the best "
            "method from the runner-up and each method from the baseline; the [robustness page](robustness.html) "
            "whether the verdict survives dropped or shifted labels, and the metric bounds for unjudged items.")
HOW_SURE_QUICK = ("How sure is this table: the budget page (how many questions would separate the methods) and the "
                  "robustness page (whether the verdict survives label noise) are absent from a quick run; "
                  "`rankbench run` (without `--quick`) builds them.")
# The version's plots, linked from the header where the page names them (the quick run draws none).
PLOTS = (("bars", "bars"), ("recall@k", "recall"), ("by question kind", "kinds"), ("mean grade by rank", "grades"),
         ("calibration", "calibration"))


def plots_line(aggregate: pd.DataFrame) -> str:
    """The header's plot links; the per-kind heatmap only when the questions have two kinds or more (with one, it is
    a single column repeating the bars, and the page says the per-kind breakdown does not apply)."""
    several_kinds = len(question_kinds(aggregate)) > 1
    links = [f"[{label}](plots/{name}.svg)" for label, name in PLOTS if several_kinds or name != "kinds"]
    return "- plots: " + ", ".join(links)


def cost_page(aggregate: pd.DataFrame, cost: pd.DataFrame, report: Mapping[str, Any], dataset: str, qset: str,
              pairs: pd.DataFrame | None = None, decision: Mapping[str, Any] | None = None,
              frontier: pd.DataFrame | None = None, margin: float | None = None, image: str | None = None,
              indexes: Mapping[str, Mapping[str, Any]] | None = None, serving: pd.DataFrame | None = None,
              serving_metadata: Mapping[str, Any] | None = None) -> str:
    """Cost beside quality: with `serving` (serving.parquet, its metadata the machine), what each method costs served
    (report/serving.py: latency; megabytes in memory and on disk, the dimensions it searches and, when its money is
    known, tokens, requests and dollars per 1,000 questions: records/footprint.py); then the headline metrics
    beside the workflow's CPU per question and one-time seconds, and what is counted;
    with `indexes` (dense method -> its FAISS index's size record), the index's build seconds; with
    `frontier` (analysis.frontier.frontier on the first headline metric, its margin and plot file), the
    quality-cost frontier; with the pairs and `decision` (types, inputs, settings), the comparison page's "What to
    do" with this run's ms/question in its evidence.

    Timings change from run to run, so they live on this page and not on the comparison page, which stays
    byte-identical across runs apart from its date.
    """
    grain, headline = report["grain"], [tuple(item) for item in report["headline"]]
    methods = sorted(aggregate["method"].unique())
    table = marked(aggregate, report["alpha"])
    frame = wide(table, grain, ALL_KINDS, headline, report["ci"], methods)
    by_method = cost.set_index("method").reindex(methods)
    star = [("*" if batched else "") + ("†" if cached else "")
            for batched, cached in zip(by_method["batched"].fillna(False), by_method["cached"].fillna(0))]
    for column, name in (("p50_ms", "workflow CPU ms/question p50"), ("p95_ms", "workflow CPU ms/question p95")):
        frame[name] = [_seconds(value, 3 if value < 1 else 1) + mark if pd.notna(value) else "–"
                       for value, mark in zip(by_method[column], star)]
    for column, name in (("onetime_s", "one-time s (query side)"), ("index_s", "index-side s (once per corpus)")):
        frame[name] = by_method[column].map(lambda v: _seconds(v, 2)).to_numpy()
    calls = bool((by_method["calls"].fillna(0) > 0).any())
    if calls:
        frame["LLM calls"] = by_method["calls"].map(lambda v: "–" if pd.isna(v) else f"{int(v):,}").to_numpy()
        frame["LLM tokens"] = ["–" if not calls_sent > 0 else "?" if pd.isna(tokens) else f"{int(tokens):,}"
                               for tokens, calls_sent in zip(by_method["call_tokens"], by_method["calls"])]
    api = bool(by_method[["index_sent", "query_sent"]].notna().any(axis=None))
    if api:
        for side, name in (("query", "API tokens, query side"), ("index", "API tokens, index side")):
            frame[name] = [_tokens(tokens, sent) for tokens, sent in
                           zip(by_method[f"{side}_tokens"], by_method[f"{side}_sent"])]
    money = serving is not None and bool(serving["usd_per_1k"].notna().any())
    if serving is not None:
        served = serving.set_index("method").reindex(methods)
        frame["MB in RAM"] = served["ram_bytes"].map(megabytes).to_numpy()
        frame["MB on disk"] = served["disk_bytes"].map(megabytes).to_numpy()
        frame["dimensions"] = served["dimensions"].map(lambda v: "–" if pd.isna(v) else f"{int(v)}").to_numpy()
        if money:
            frame["tokens/question"] = served["tokens_per_query"].map(
                lambda v: "–" if pd.isna(v) else f"{v:,.1f}").to_numpy()
            frame["requests/question"] = served["requests_per_query"].map(
                lambda v: "–" if pd.isna(v) else f"{v:,.2f}").to_numpy()
            frame["$ per 1,000 questions"] = served["usd_per_1k"].map(_dollars).to_numpy()
    if indexes:
        frame["index build s"] = [_seconds(indexes[m]["build_s"], 2) if m in indexes else "–" for m in methods]
    frame["stages counted"] = by_method["stages"].fillna("").to_numpy()
    served = serving if serving is not None else pd.DataFrame(columns=["method", "p50_ms", "p95_ms"])
    served_cost = served.set_index("method")[["p50_ms", "p95_ms"]].to_dict("index")
    return "\n".join([
        f"# {dataset} — question-set version {qset}: cost beside quality", "",
        *(served_section(serving, serving_metadata or {}) if serving is not None else []),
        "## Workflow CPU per question", "",
        markdown_grid(frame), "",
        f"Quality: {grain} grain, all questions (marks as on the comparison page). Workflow CPU ms/question: what the "
        "run's own jobs spent on a question (not what a served question costs: the Served section is), timed "
        "inside the jobs (the method's own and its inputs': query embeddings, first "
        "stages), summed over them, as the median (p50) and 95th percentile (p95) over the version's questions. "
        "One-time s: the rest of those jobs' wall-clock seconds (process start-up, loading indexes and models, "
        "compiling, reading and writing), paid once per run however many questions; index-side s: corpus jobs, "
        "paid once per corpus (both from the rules' benchmark files). A job shared by two methods counts in full "
        "for each. * : a job worked on all questions at once (fusion, sparse search, query encoding in batches), so "
        "each question is charged its mean and p95 understates the slowest questions. † : query embeddings of "
        "some questions came from the cache (encoded by an earlier run or version), so their encoding is not "
        "counted and the figures understate a fresh question; `timings/` says how many. – : a job wrote no timing "
        "record.", "",
        *([LLM_CALLS_NOTE, ""] if calls else []), *([API_TOKENS_NOTE, ""] if api else []),
        *([SERVING_NOTE, ""] if serving is not None else []), *([MONEY_NOTE, ""] if money else []),
        *([INDEX_NOTE, ""] if indexes else []),
        *(frontier_lines(frontier, metric_label(*headline[0]), headline[0][1], margin, image)
          if frontier is not None and len(frontier) else []),
        *(decision_lines(aggregate, pairs, grain, headline, report["alpha"], decision["types"], decision["inputs"],
                         decision["settings"], cost=served_cost)[4:]
          if pairs is not None and decision is not None else [])])


def frontier_lines(table: pd.DataFrame, label: str, k: int, margin: float | None, image: str | None) -> list[str]:
    """The quality-cost frontier as a section: the table (Pareto set starred), the cheapest method shown as good as
    the best, and the plot."""
    frame = pd.DataFrame({
        "method": [markdown_literal(m) + (" ★" if front else "") + (" ⛔" if over else "")
                   for m, front, over in zip(table["method"], table["pareto"], table["over_budget"])],
        f"{label} [95% CI]": [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in
                              zip(table["mean"], table["ci_low"], table["ci_high"])],
        "served ms p95": table["p95_ms"].map(lambda v: "–" if pd.isna(v) else f"{v:.1f}" if v >= 1 else f"{v:.3f}"),
        "MB in RAM": table["ram_bytes"].map(megabytes),
        "dimensions": table["dimensions"].map(lambda v: "–" if pd.isna(v) else f"{int(v)}"),
        **({"$ per 1,000 questions": table["usd_per_1k"].map(_dollars)} if table["usd_per_1k"].notna().any()
           else {}),
        f"prompt characters at k={k}": table["prompt_chars"].map(lambda v: "–" if pd.isna(v) else f"{v:,.0f}"),
        "no worse than the best (Holm p)": [
            "(best)" if i == 0 else ("yes " if ok else "not shown ") + f"({p:.3f})" if margin is not None else "–"
            for i, (ok, p) in enumerate(zip(table["no_worse_than_best"], table["p_no_worse_holm"]))],
    })
    cheapest = cheapest_as_good(table)
    best = table["method"].iloc[0]
    if margin is None:
        verdict = (f"No `evaluation.margin` on {label}: no method can be shown as good as the best ({best}), so "
                   "none is named as the cheapest equivalent (not shown different is not as good).")
    elif cheapest is None and bool(table["over_budget"].any()):
        verdict = (f"No method shown no worse than the best ({best}) by more than {margin:g} fits the latency "
                   "budget: the best within it, and what it costs in quality, is under What to do.")
    elif cheapest == best or cheapest is None:
        verdict = (f"No cheaper method is shown no worse than the best ({best}) by more than {margin:g}: the best "
                   "is also the cheapest choice the numbers support.")
    else:
        verdict = (f"**{markdown_literal(cheapest)}** is the cheapest method shown no worse than the best "
                   f"({markdown_literal(best)}) by more than {margin:g} (one-sided tests, Holm over the pairs with the "
                   "best): choose it unless the last few points of quality matter more than its cost.")
    return ["## Quality against cost", "", markdown_grid(frame.set_index("method")), "",
            f"★ Pareto set of quality against served p95 (the Served section): no other method is both better and "
            "faster. ⛔ : over `decision.latency_budget_ms`, never named the cheapest choice. MB in RAM and "
            "dimensions: what serving the method holds and searches (the notes above); "
            f"prompt characters: the mean length of its top {k} chunks, what a RAG prompt would carry. "
            + verdict, "", *([f"![quality against cost]({image})", ""] if image else [])]


def _seconds(value: float, digits: int) -> str:
    return "–" if pd.isna(value) else f"{value:.{digits}f}"


LLM_CALLS_NOTE = ("LLM calls: the requests the method's jobs sent to a chat model in this run (a response in the "
                  "LLM cache is never asked again); LLM tokens: the tokens its `usage` field reported for them, "
                  "? when the server reported none.")


INDEX_NOTE = ("Index build s: the seconds building a dense method's FAISS index took, vectors loaded (the FAISS "
              "job's other seconds are in index-side s).")


SERVING_NOTE = (
    "MB in RAM, MB on disk: what serving the method takes, its inputs' included (a fusion or a reranker serves its "
    "first stages): the files its query jobs read to answer a question — a FAISS index file, BM25 or sparse arrays "
    "(in RAM uncompressed), a Lucene or vector-database folder, the float vectors a re-scoring index or a "
    "bi-encoder scorer reads — never the vectors an index was built from, nor the models (shared between methods). "
    "– : nothing served here (a search endpoint). Dimensions: of the dense vectors it compares with a question (a "
    "truncated index's, e.g. 128 for `d128`; the largest when it compares several).")


MONEY_NOTE = (
    "Money: from the price table (`cost.prices`: dollars per 1M input tokens and per request of each model) and what "
    "the method's query jobs sent this run: an embedding API is sent each question alone (one request of its "
    "tokens), an LLM reranker its calls over its questions. – : unknown — a model it calls has no price, the "
    "server reported no tokens, or every call was answered from a cache this run (rerun without the cache to see "
    "it). A method calling no remote model costs $0.")


def _dollars(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:,.4f}"


API_TOKENS_NOTE = (
    "API tokens: the tokens an embedding API billed (its `usage` field) for the texts its jobs sent when they last "
    "ran; a text in the API cache (`cache/api-embeddings/`: same endpoint, model, dimensions, input type and text) "
    "is never sent again, so a rerun or a new version pays only for new texts. – : no API encoder on that side; "
    "? : the server reported no usage (the texts sent are counted instead).")


def _tokens(tokens: float, sent: float) -> str:
    """A cell of the API token columns: tokens billed, `? (n texts)` when unreported, – without an API job."""
    if pd.isna(sent):
        return "–"
    return f"? ({int(sent)} texts)" if pd.isna(tokens) else f"{int(tokens):,}"


LEAK_HEADINGS = {"staff": "staff-only in top {k}", "outdated": "out of date in top {k}"}
LEAK_NAMES = {"staff": "Staff-only", "outdated": "Out of date"}


def leaks_section(leaks: pd.DataFrame, methods: list[str], staff_documents: int) -> list[str]:
    """Markdown lines: per method and k, questions shown at least one staff-only chunk (public questions only) or
    one chunk not in force at their as_of, out of the questions it applies to, with the mean count per question.
    A leak type that cannot happen (no staff-only document; no question with an as_of) is one line, not zeros."""
    asked = leaks.groupby("leak")["n_questions"].sum()
    absent = {"staff": "no staff-only document" if staff_documents == 0
              else "no public question" if asked.get("staff", 0) == 0 else None,
              "outdated": "no question with an `as_of`" if asked.get("outdated", 0) == 0 else None}
    if all(absent.values()):
        return ["## Leaks", "", f"Not applicable ({absent['staff']}, {absent['outdated']}).", ""]
    frame = pd.DataFrame(index=pd.Index(methods, name="method"))
    for leak in [leak for leak in ("staff", "outdated") if not absent[leak]]:
        for k in sorted(leaks["k"].unique()):
            rows = leaks[(leaks["leak"] == leak) & (leaks["k"] == k)].set_index("method")
            frame[LEAK_HEADINGS[leak].format(k=k)] = [
                f"{rows.at[m, 'n_with_leak']}/{rows.at[m, 'n_questions']} ({rows.at[m, 'mean']:.2f})"
                if m in rows.index else "–" for m in methods]
    lines = ["## Leaks", "",
             "Questions with at least one leaked chunk in the top k, out of the questions concerned "
             "(staff-only: public questions; out of date: questions with an `as_of`), and in brackets the mean "
             "number of leaked chunks per question. A method with `filters` should show 0."
             + "".join(f" {LEAK_NAMES[leak]}: not applicable ({why})." for leak, why in absent.items() if why),
             ""]
    header = "| method | " + " | ".join(frame.columns) + " |"
    lines += [header, "|---|" + "---:|" * len(frame.columns)]
    lines += [f"| {method} | " + " | ".join(row) + " |" for method, row in zip(frame.index, frame.to_numpy())]
    return lines + [""]


def labels_section(validation: str) -> list[str]:
    """validation.md's findings (labels checked against the documents and every chunker's chunks), under this page's
    heading level."""
    return [validation.replace("# Label validation", "### Label validation").strip(), ""]


def judge_section(agreement: pd.DataFrame | None) -> list[str]:
    """How far the config's LLM judge agrees with these human labels (from `llm/agreement.parquet`)."""
    lines = ["### LLM judge agreement with these labels", ""]
    if agreement is None:
        return lines + ["The config's LLM judge grades this version, but its agreement has not been measured yet: "
                        "run `snakemake llm` (the `llm` target), then this page again.", ""]
    frame = pd.DataFrame({
        "n pairs": agreement["n"].to_numpy(),
        "exact": agreement["exact"].map("{:.3f}".format).to_numpy(),
        "kappa (quadratic)": agreement["kappa_quadratic"].map("{:.3f}".format).to_numpy(),
        "95% CI": [("–" if np.isnan(low) else f"{low:.2f} to {high:.2f}")
                   for low, high in zip(agreement["kappa_quadratic_low"], agreement["kappa_quadratic_high"])],
    }, index=pd.Index(agreement["kind"], name="kind"))
    return lines + ["Over the pooled pairs graded both by people and by the judge (`llm/agreement.md` has the "
                    "confusion matrix). A low kappa means the judged labels of a version built from this judge "
                    "need review.", "", markdown_grid(frame), ""]


@dataclass(frozen=True)
class ComparisonInputs:
    """Everything the comparison page of one version shows, read from its rule's inputs and params
    (workflow/scripts/comparison_table.py).

    staff_documents: staff-only documents in the corpus (none: the staff leak cannot happen).
    judged: the config's LLM judge grades this version; judge_agreement: its agreement table (llm/agreement.parquet)
    once the `llm` target has run. how_sure: the budget's and the robustness pages' sentences for the findings;
    tiers: tiers.parquet (tiers and rank intervals of the headline metrics); breakdowns: breakdowns.parquet (the
    aggregate per tag and per difficulty; None or empty when the questions carry neither). models: config key ->
    {model, revision, weights_sha256} of every model loaded and {engine, facts} of every engine
    (configuration.models.model_provenance).
    quick: the page of a quick run (no explorer link; it says what the full run adds). software: package -> version
    of rankbench and its main dependencies (configuration.software.software_versions); commit: the git commit of
    rankbench's source (None off a checkout). cards: method -> {type, description, models}
    (configuration.models.method_cards), the table's legend of methods. decision: the `decision` block (thresholds
    of the "What to do" rules); method_inputs: method -> the runs it consumes (a reranker's first stage, a fusion's
    inputs).
    evidence: evidence.parquet (the aggregate at evidence grain, report.chunking); chunkers: method -> its chunker;
    tokenizer: what counted the prompt tokens; evidence_scored / evidence_others: the evaluated questions scored at
    evidence grain, and the rest. since_last_run: the "Since the last run" section (report.run_pages), the page's last;
    drafts: the draft question-set versions the page is made from (its banner, report.pages.draft_banner).
    """

    aggregate: pd.DataFrame
    pairs: pd.DataFrame
    questions: pd.DataFrame
    manifest: Mapping[str, Any]
    dataset: str
    evaluation: Mapping[str, Any]
    report: Mapping[str, Any]
    validation: str
    config_json: str
    config_sha256: str
    date: str
    method_types: Mapping[str, str]
    leaks: pd.DataFrame
    staff_documents: int
    degraded: Mapping[str, str]
    judge_agreement: pd.DataFrame | None = None
    judged: bool = False
    how_sure: Sequence[str] = ()
    tiers: pd.DataFrame | None = None
    breakdowns: pd.DataFrame | None = None
    models: Mapping[str, Mapping[str, Any]] | None = None
    quick: bool = False
    software: Mapping[str, str] | None = None
    commit: str | None = None
    cards: Mapping[str, Mapping[str, Any]] | None = None
    decision: Mapping[str, Any] | None = None
    method_inputs: Mapping[str, Sequence[str]] | None = None
    abstention: pd.DataFrame | None = None  # analysis/calibration.zone_table of the methods with abstention zones
    evidence: pd.DataFrame | None = None
    chunkers: Mapping[str, str] | None = None
    tokenizer: str = "regex"
    evidence_scored: Sequence[str] = ()
    evidence_others: Sequence[str] = ()
    since_last_run: str = ""
    drafts: Sequence[str] = ()
    recommended: str = ""  # recommended.md (report/recommend.py's box): the page's first section

    @property
    def headline(self) -> list[tuple[str, int]]:
        """The headline (metric, k) pairs, `report.headline`."""
        return [(str(metric), int(k)) for metric, k in self.report["headline"]]

    @property
    def comparisons(self) -> Any:
        """`report.comparisons`: "baseline" (each method against it) or the planned pairs."""
        return self.report.get("comparisons", "baseline")

    @cached_property
    def table(self) -> pd.DataFrame:
        """The aggregate with its significance marks (report.tables.marked), which every table of the page shows."""
        return marked(self.aggregate, self.report["alpha"])

    @property
    def methods(self) -> list[str]:
        """The methods the aggregate holds, in the order of every table."""
        return sorted(self.aggregate["method"].unique())


def headline_table(inputs: ComparisonInputs) -> tuple[pd.DataFrame, dict[int, str]]:
    """The headline grid with its numbered marks and their footnotes (report.comparisons chooses the family)."""
    report, grain = inputs.report, inputs.report["grain"]
    family = comparison_family(inputs.table, inputs.pairs, grain, inputs.headline, inputs.comparisons,
                               report["alpha"])
    return headline_grid(inputs.table, family, grain, inputs.headline, report["ci"], inputs.methods,
                         every=inputs.comparisons != "baseline")


class ComparisonFiles(NamedTuple):
    """The comparison page of one version as its rule writes it: the page in Markdown and in HTML (headline marks
    with their footnotes as tooltips), and its tables in LaTeX (booktabs, tiers as superscripts) and CSV."""

    markdown: str
    html: str
    latex: str
    csv: str


def comparison_files(inputs: ComparisonInputs) -> ComparisonFiles:
    """The one rendering of the comparison page: the page (draft banner first, "Since the last run" last) and its
    tables, all from the bundle."""
    report, manifest, methods = inputs.report, inputs.manifest, inputs.methods
    page = draft_banner(inputs.drafts) + with_section(comparison_page(inputs), inputs.since_last_run)
    grid, notes = headline_table(inputs)
    html = with_tooltips(markdown_html(page, f"{inputs.dataset} {manifest['version']}"), grid, notes)
    caption = (f"{inputs.dataset}, question-set version {manifest['version']}: {len(methods)} methods. "
               + legend(report["alpha"], inputs.evaluation.get("baseline")).replace("`", "") + " Superscript "
               + TIERS_LEGEND.format(alpha=report["alpha"]))
    comments = [f"{inputs.dataset} question-set version {manifest['version']} sha256 {manifest['sha256']}",
                f"config sha256 {inputs.config_sha256}"]
    grains = [g for g in ("document", "chunk") if (inputs.table["grain"] == g).any()]
    tiered = with_tiers(inputs.table, inputs.tiers) if inputs.tiers is not None else inputs.table
    latex = latex_table(tiered, inputs.headline, grains, methods, report["ci"], caption,
                        f"tab:{inputs.dataset}-{manifest['version']}", comments)
    metrics = sorted(set(table_metrics(inputs.aggregate, inputs.evaluation["ks"])) | set(inputs.headline))
    return ComparisonFiles(page, html, latex, csv_table(inputs.table, metrics, report["ci"]))


def comparison_page(inputs: ComparisonInputs) -> str:
    """The whole comparison page in Markdown; every number comes from the aggregate, the pairs and the leaks."""
    aggregate, evaluation, table, methods = inputs.aggregate, inputs.evaluation, inputs.table, inputs.methods
    ks, grain, ci, alpha = evaluation["ks"], inputs.report["grain"], inputs.report["ci"], inputs.report["alpha"]
    headline, comparisons, baseline = inputs.headline, inputs.comparisons, evaluation.get("baseline")
    grid, footnotes = headline_table(inputs)
    evaluated = int(aggregate[(aggregate["kind"] == ALL_KINDS) & (aggregate["grain"] == "document")]["n"].max())
    experiment = json.loads(inputs.config_json).get("experiment", {})
    version, asked = inputs.manifest["version"], len(inputs.questions)
    provenance = [
        f"- dataset: `{inputs.dataset}`; question-set version: `{version}` (sha256 `{inputs.manifest['sha256']}`)",
        f"- questions: {asked}; with a relevant label (evaluated): {evaluated}; "
        f"excluded (no relevant label, counted apart): {asked - evaluated}",
        f"{DATE_PREFIX}{inputs.date}",
        f"- config: sha256 `{inputs.config_sha256}` (the config as written; the effective config, every default "
        "filled in, is linked at the end of this page)",
        *models_lines(inputs.models or {}),
        *software_lines(inputs.software or {}, inputs.commit),
    ]
    if experiment:
        provenance.append(f"- experiment: {markdown_literal(experiment.get('label', '–'))}"
                          + (f" — {markdown_literal(experiment['note'])}" if experiment.get("note") else ""))
    provenance.append(f"- relevant when grade >= {evaluation['relevance_threshold']}; nDCG gain {evaluation['gain']}; "
                      f"ranked lists of depth {evaluation['depth']}; questions missing from a run score 0 "
                      f"(trec_eval -c); baseline: {baseline or 'none'}")
    lines = [
        f"# {inputs.dataset} — question-set version {version}",
        "",
        *audience_line(dict(inputs.manifest)),
        f"{evaluated} of {asked} questions evaluated (with a relevant label); provenance (versions, hashes, "
        "models, date) at the end of the page.",
        "",
        QUICK_LINE if inputs.quick else "- every question, what each method returned and where it wins or loses: "
        "[explorer.html](explorer.html)",
        *([] if inputs.quick else [plots_line(aggregate)]),
        "",
        *(["## Recommended configuration", "", inputs.recommended.rstrip("\n"), ""] if inputs.recommended else []),
        *answer_lines(aggregate, inputs.pairs, grain, headline, alpha),
        *what_to_do_lines(aggregate, inputs.pairs, grain, headline, alpha, inputs.method_types,
                          inputs.method_inputs or {}, inputs.decision or {}, abstention=inputs.abstention),
    ]
    lines += [
        f"## Headline ({grain} grain, all questions)",
        "",
        markdown_grid(grid),
        "",
        *footnote_lines(footnotes),
        *other_grain_lines(table, grain, headline, ci, methods),
        " ".join(filter(None, [legend(alpha, baseline) if comparisons == "baseline" else
                               "Bold: best value of the column.", family_legend(comparisons, alpha, baseline)]))
        + " Cost per method (ms of query-side work per question, p50 and p95, and one-time seconds) beside these "
        + ("numbers: the cost page, absent from a quick run (`rankbench run` without `--quick` builds it)"
           if inputs.quick else "numbers: the [cost page](cost.html)")
        + " (timings vary from run to run, so they are kept off this page).",
        "",
        *methods_legend(inputs.cards or {}),
        HOW_SURE_QUICK if inputs.quick else HOW_SURE,
        "",
    ]
    notes = [f"- {note}" for note in near_best(table, inputs.pairs, grain, ALL_KINDS, headline)]
    notes += [f"- **{method} is degraded**: its scorer failed ({reason}), so the run is its input run's order."
              for method, reason in sorted(inputs.degraded.items())]
    notes += [f"- **{method} matches no label**: none of its results in the top {max(ks)} of any question is labelled "
              "(foreign ids, or an empty run; its log says more), so its zeros say nothing about its ranking."
              for method in unlabelled_methods(aggregate)]
    lines += [*notes, ""] if notes else []
    lines += leaks_section(inputs.leaks, methods, inputs.staff_documents)
    lines += ["## Findings", ""]
    lines += [f"- {sentence}" for sentence in findings(aggregate, inputs.pairs, grain, headline, inputs.method_types,
                                                       alpha, evaluation["bootstrap_resamples"])]
    lines += [f"- {sentence}" for sentence in inputs.how_sure]
    lines.append("")
    tiers = inputs.tiers
    if tiers is not None and len(tiers):
        n = int(tiers.loc[(tiers["grain"] == grain) & (tiers["kind"] == ALL_KINDS), "n"].max())
        lines += [f"## Tiers and rank intervals ({grain} grain, all questions)", "",
                  markdown_grid(tier_grid(tiers, grain, ALL_KINDS, headline, methods)), "",
                  "T" + TIERS_LEGEND.format(alpha=alpha)[1:]
                  + " Then the rank by mean and its 95% bootstrap interval over the "
                  f"{n} questions every method evaluates (`tiers.parquet` has every kind and grain).", ""]
    full = table_metrics(aggregate, ks, inputs.report.get("columns", []))
    shown: dict[str, str] = {}
    for g in (grain, *[g for g in ("document", "chunk") if g != grain]):
        if (table["grain"] == g).any():
            present = set(zip(table.loc[table["grain"] == g, "metric"], table.loc[table["grain"] == g, "k"]))
            columns = [(m, k) for m, k in full if (m, k) in present]
            grid = markdown_grid(wide(table, g, ALL_KINDS, columns, ci, methods))
            same = next((other for other, text in shown.items() if text == grid), None)
            polluted = not same and any(m in POLLUTION_METRICS for m, _ in columns)
            lines += [f"## All questions, {g} grain", "",  # one chunk per document: the grains agree cell for cell
                      f"The same figures as at {same} grain (each document is one chunk)." if same else grid, "",
                      *([POLLUTION_LEGEND, ""] if polluted else [])]
            shown[g] = grid
    lines += chunking_section(inputs.evidence if inputs.evidence is not None else pd.DataFrame(),
                              inputs.evidence_scored, inputs.evidence_others, inputs.chunkers or {}, ks, ci, alpha,
                              baseline, inputs.tokenizer)
    lines += kind_section(aggregate, grain, headline[0], ci, methods, alpha, inputs.questions,
                          int(inputs.report.get("min_group", MIN_GROUP)))
    lines += ["## Labels", "", *labels_section(inputs.validation)]
    if inputs.judged:
        lines += judge_section(inputs.judge_agreement)
    lines += ["## Provenance", "", *provenance, ""]
    # the file, not the 250 lines of the demo's on the page: the page stays short enough to read
    lines += ["## Effective config", "", "The config as this run used it, every default filled in and grids expanded: "
              "[effective-config.yaml](effective-config.yaml).", ""]
    return "\n".join(lines)


GRAIN_NAMES = {"document": "document grain (ranked chunks collapsed to their documents' first chunk)",
               "chunk": "chunk grain (each ranked chunk counts: what a RAG prompt receives)"}


def other_grain_lines(table: pd.DataFrame, grain: str, headline: Sequence[tuple[str, int]], ci: bool,
                      methods: Sequence[str]) -> list[str]:
    """The headline metrics at the other grain, beside the headline (none when the aggregate has only one grain)."""
    other = "document" if grain == "chunk" else "chunk"
    if not (table["grain"] == other).any():
        return []
    grid = markdown_grid(wide(table, other, ALL_KINDS, headline, ci, methods))
    if grid == markdown_grid(wide(table, grain, ALL_KINDS, headline, ci, methods)):
        return [f"The same figures at {other} grain (each document is one chunk).", ""]
    return [f"The same at {GRAIN_NAMES[other]}; the headline above is at {GRAIN_NAMES[grain]}:", "", grid, ""]


QUICK_LINE = ("- quick run (`rankbench run --quick`): this page only; `rankbench run` adds the explorer, the plots, "
              "the failure, calibration, budget and robustness pages and this page's findings from the last two")


def methods_legend(cards: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The legend of the methods under the headline table: each one's type, the models it uses (its inputs'
    included; the header says what each is) and its `description`."""
    if not cards:
        return []
    lines = ["Methods (type; models used, its inputs' included; description):", ""]
    for name, card in sorted(cards.items()):
        models = "; " + ", ".join(f"`{model}`" for model in card["models"]) if card["models"] else ""
        words = f": {markdown_literal(card['description'])}" if card.get("description") else ""
        lines.append(f"- `{name}` ({card['type']}{models}){words}")
    return lines + [""]


def models_lines(models: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Header lines naming every model, engine and endpoint the methods used: hub models at their resolved commit,
    packaged ones with their package's version, API models with their (redacted) endpoint, the sha256 of the weights,
    and each engine (Anserini, a vector database, a search service) as its run file records it."""
    if not models:
        return []
    engines = any("engine" in entry for entry in models.values())
    lines = [f"- models{', engines' if engines else ''} and endpoints the methods used (hub revision resolved to its "
             "commit; sha256 of the weight files):"]
    for where, entry in sorted(models.items()):
        if "engine" in entry:
            facts = ", ".join(f"{label} `{value}`" for label, value in entry["facts"])
            lines.append(f"  - `{where}`: `{entry['engine']}`" + (f" ({facts})" if facts else ""))
            continue
        source = (f" at revision `{entry['revision']}`" if entry.get("revision") else "") + \
            (f" from {entry['package']}" if entry.get("package") else "") + \
            (f" at endpoint `{entry['endpoint']}`" if entry.get("endpoint") else "")
        weights = "" if "endpoint" in entry else f", weights sha256 `{entry['weights_sha256'] or '–'}`"
        lines.append(f"  - `{where}`: `{entry['model']}`{source}{weights}")
    return lines


def software_lines(software: Mapping[str, str], commit: str | None = None) -> list[str]:
    """The header line naming the versions of rankbench (and its git commit, run from a checkout) and of the main
    packages that made the page."""
    if not software:
        return []
    return ["- software: " + ", ".join(f"{name} {version}" + (f" (git commit `{commit}`)" if commit and
                                                                 name == "rankbench" else "")
                                       for name, version in software.items())]


def unlabelled_methods(aggregate: pd.DataFrame) -> list[str]:
    """Methods whose Judged@k is 0 over all questions at every k and grain: their ids match no label."""
    judged = aggregate[(aggregate["metric"] == "judged") & (aggregate["kind"] == ALL_KINDS) & (aggregate["n"] > 0)]
    return sorted(method for method, rows in judged.groupby("method", sort=True) if (rows["mean"] == 0).all())
