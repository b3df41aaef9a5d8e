"""Write the comparison page of one question-set version (Markdown, HTML) and its LaTeX and CSV tables."""

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from rankbench.evaluation.evidence import evidence_questions
from rankbench.io.files import write_text
from rankbench.pipeline.models import model_provenance
from rankbench.pipeline.provenance import source_commit
from rankbench.pipeline.scripting import run_script
from rankbench.pipeline.software import software_versions
from rankbench.report import budget, robustness
from rankbench.report.comparison import ComparisonInputs, comparison_page, headline_table
from rankbench.report.headline_marks import with_tooltips
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.runs import with_section
from rankbench.report.tables import (
    TIERS_LEGEND,
    csv_table,
    latex_table,
    legend,
    marked,
    table_metrics,
    with_tiers,
)


def how_sure(inputs, quick: bool) -> list[str]:
    """The budget's and the robustness pages' sentences for the findings (a quick run builds neither)."""
    if quick:
        return []
    return budget.headline_findings(pd.read_parquet(inputs.budget)) + robustness.headline_findings(
        pd.read_parquet(inputs.robustness), pd.read_parquet(inputs.bounds))


def evidence_questions_split(labels, threshold) -> dict:
    """The evaluated questions scored at evidence grain, and the others (a relevant label without evidence)."""
    scored = evidence_questions(labels, threshold)
    evaluated = sorted(set(labels.loc[labels["grade"] >= threshold, "qid"]))
    return {"evidence_scored": scored, "evidence_others": [qid for qid in evaluated if qid not in set(scored)]}


def page_inputs(snakemake) -> ComparisonInputs:
    """The page's bundle, from the rule's inputs and params."""
    p, given = snakemake.params, snakemake.input
    documents = pd.read_parquet(given.documents, columns=["audience"])
    degraded = {}
    for method, path in zip(p.reranked_methods, given.reranked):
        flags = pd.read_parquet(path, columns=["degraded", "degraded_reason"])
        if flags["degraded"].any():
            degraded[method] = "; ".join(sorted(set(flags.loc[flags["degraded"], "degraded_reason"])))
    agreement = Path(p.judge_agreement) if p.judge_agreement else None
    validation = Path(given.validation).read_text().removeprefix(draft_banner(p.drafts))
    return ComparisonInputs(
        aggregate=pd.read_parquet(given.aggregate), pairs=pd.read_parquet(given.pairs),
        questions=pd.read_parquet(given.questions), manifest=json.loads(Path(given.manifest).read_text()),
        dataset=p.dataset, evaluation=p.evaluation, report=p.report, validation=validation,
        config_json=p.config_json, effective_config=Path(given.effective_config).read_text(),
        config_sha256=p.config_sha256, date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        method_types=p.method_types, leaks=pd.read_parquet(given.leaks),
        staff_documents=int((documents["audience"] == "staff").sum()), degraded=degraded,
        judge_agreement=pd.read_parquet(agreement) if agreement and agreement.exists() else None,
        judged=agreement is not None, tiers=pd.read_parquet(given.tiers),
        breakdowns=pd.read_parquet(given.breakdowns),
        how_sure=how_sure(given, p.quick), quick=p.quick,
        models=model_provenance(p.models, dict(zip(p.engine_methods, given.engine_runs))),
        software=software_versions(), commit=source_commit(), cards=p.cards, decision=p.decision,
        method_inputs=p.method_inputs, abstention=pd.read_parquet(given.zone_table) if p.zones else None,
        evidence=pd.read_parquet(given.evidence), chunkers=p.chunkers, tokenizer=p.tokenizer,
        **evidence_questions_split(pd.read_parquet(given.labels), p.evaluation["relevance_threshold"]))


def main(snakemake):
    p = snakemake.params
    inputs = page_inputs(snakemake)
    aggregate, manifest, tiers = inputs.aggregate, inputs.manifest, inputs.tiers
    page = with_section(comparison_page(inputs), Path(snakemake.input.since_last_run).read_text())
    table = marked(aggregate, p.report["alpha"])
    headline = [tuple(item) for item in p.report["headline"]]
    methods = sorted(aggregate["method"].unique())
    caption = (f"{p.dataset}, question-set version {manifest['version']}: {len(methods)} methods. "
               + legend(p.report["alpha"], p.evaluation.get("baseline")).replace("`", "") + " Superscript "
               + TIERS_LEGEND.format(alpha=p.report["alpha"]))
    comments = [f"{p.dataset} question-set version {manifest['version']} sha256 {manifest['sha256']}",
                f"config sha256 {p.config_sha256}"]
    grains = [g for g in ("document", "chunk") if (table["grain"] == g).any()]
    write_text(latex_table(with_tiers(table, tiers), headline, grains,
                           methods, p.report["ci"], caption, f"tab:{p.dataset}-{manifest['version']}", comments),
               snakemake.output.latex)
    metrics = sorted(set(table_metrics(aggregate, p.evaluation["ks"])) | set(headline))
    write_text(csv_table(table, metrics, p.report["ci"]), snakemake.output.csv)
    page = draft_banner(p.drafts) + page
    grid, notes = headline_table(inputs)
    write_text(with_tooltips(markdown_html(page, f"{p.dataset} {manifest['version']}"), grid, notes),
               snakemake.output.html)
    write_text(page, snakemake.output.table)


run_script(main, snakemake)
