"""Write the comparison page of one question-set version (Markdown, HTML) and its LaTeX and CSV tables: the bundle
read from the rule's inputs and params, rendered by rankbench.report.comparison.comparison_files."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from rankbench.configuration.models import model_provenance
from rankbench.configuration.software import software_versions
from rankbench.evaluation.evidence import evidence_questions
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.records.provenance import source_commit
from rankbench.report import budget, robustness
from rankbench.report.comparison import ComparisonInputs, comparison_files
from rankbench.report.pages import draft_banner


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
        config_json=p.config_json,
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
        since_last_run=Path(given.since_last_run).read_text(), drafts=p.drafts,
        recommended=Path(given.recommended).read_text(),
        **evidence_questions_split(pd.read_parquet(given.labels), p.evaluation["relevance_threshold"]))


def main(snakemake):
    files = comparison_files(page_inputs(snakemake))
    out = snakemake.output
    for text, path in ((files.markdown, out.table), (files.html, out.html), (files.latex, out.latex),
                       (files.csv, out.csv)):
        write_text(text, path)


run_script(main, snakemake)
