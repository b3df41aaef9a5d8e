"""Write the comparison page of one question-set version (Markdown, HTML), its LaTeX and CSV tables, and the
run's history record."""

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from rankbench.analysis import budget, robustness
from rankbench.analysis.history import run_records
from rankbench.io.files import write_text
from rankbench.pipeline.config import expand_methods
from rankbench.pipeline.cost import cost_table, read_benchmark
from rankbench.pipeline.defaults import config_yaml, effective_config
from rankbench.pipeline.models import model_provenance
from rankbench.pipeline.scripting import run_script
from rankbench.pipeline.software import software_versions
from rankbench.report.comparison import comparison_page, cost_page
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


def main(snakemake):
    p = snakemake.params
    aggregate, pairs = pd.read_parquet(snakemake.input.aggregate), pd.read_parquet(snakemake.input.pairs)
    tiers = pd.read_parquet(snakemake.input.tiers)
    questions = pd.read_parquet(snakemake.input.questions)
    documents = pd.read_parquet(snakemake.input.documents, columns=["audience"])
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    seconds = {path: read_benchmark(path) for path in snakemake.input.benchmarks}
    usage = {bench: json.loads(Path(path).read_text()) for bench, path in p.api_usage.items()}
    cost = cost_table(p.cost_plan, seconds, len(questions), usage)
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    degraded = {}
    for method, path in zip(p.reranked_methods, snakemake.input.reranked):
        flags = pd.read_parquet(path, columns=["degraded", "degraded_reason"])
        if flags["degraded"].any():
            degraded[method] = "; ".join(sorted(set(flags.loc[flags["degraded"], "degraded_reason"])))
    agreement = Path(p.judge_agreement) if p.judge_agreement else None
    config = json.loads(p.config_json)
    effective = config_yaml(effective_config(config, expand_methods(config["methods"], "config")))
    models, software = model_provenance(p.models), software_versions()
    validation = Path(snakemake.input.validation).read_text().removeprefix(draft_banner(p.drafts))
    page = comparison_page(aggregate, pairs, questions, manifest, p.dataset, p.evaluation, p.report,
                           validation, p.config_json, effective,
                           p.config_sha256, date, p.method_types, pd.read_parquet(snakemake.input.leaks),
                           int((documents["audience"] == "staff").sum()), degraded,
                           pd.read_parquet(agreement) if agreement and agreement.exists() else None,
                           judged=agreement is not None, tiers=tiers, how_sure=how_sure(snakemake.input, p.quick),
                           models=models, quick=p.quick, software=software)
    page = with_section(page, Path(snakemake.input.since_last_run).read_text())
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
    recorded = list(dict.fromkeys(headline + [tuple(p.report["plot_metric"])]))  # the history page plots the latter
    records = run_records(aggregate, manifest, p.dataset, p.config_sha256, config.get("experiment", {}),
                          recorded, p.report["grain"], models, p.method_models, software)
    write_text(json.dumps(records, indent=1, ensure_ascii=False, sort_keys=True) + "\n", snakemake.output.record)
    costs = draft_banner(p.drafts) + cost_page(aggregate, cost, p.report, p.dataset, manifest["version"])
    page = draft_banner(p.drafts) + page
    write_text(markdown_html(costs, f"cost {p.dataset} {manifest['version']}"), snakemake.output.cost_html)
    write_text(costs, snakemake.output.cost)
    write_text(markdown_html(page, f"{p.dataset} {manifest['version']}"), snakemake.output.html)
    write_text(effective, snakemake.output.effective_config)
    write_text(page, snakemake.output.table)


run_script(main, snakemake)
