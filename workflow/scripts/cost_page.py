"""Write the cost page of one question-set version: what each method costs served (serving.parquet), then the
workflow's CPU per question and one-time seconds, calls and tokens billed beside the headline metrics, the
quality-cost frontier on served p95 and "What to do" with the latency budget (Markdown, HTML)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
from pathlib import Path

import pandas as pd

from rankbench.analysis.frontier import frontier, prompt_characters
from rankbench.evaluation.metric_names import metric_label
from rankbench.execution.scripting import run_script
from rankbench.io.files import parquet_metadata, write_text
from rankbench.records.cost import cost_table, read_benchmark
from rankbench.records.serving import read_serving
from rankbench.records.timing import read_timing
from rankbench.report.comparison import cost_page
from rankbench.report.pages import draft_banner, markdown_html
from rankbench.report.plots import frontier_plot, save


def frontier_costs(p, runs: list[str], serving: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per method: what serving it costs (serving.parquet: p95 ms served, bytes in memory and on disk, dimensions,
    dollars per 1,000 questions) and the characters of its top k chunks."""
    lengths = {}
    for path in sorted(set(p.chunks.values())):
        chunks = pd.read_parquet(path, columns=["chunk_id", "text"])
        lengths[path] = dict(zip(chunks["chunk_id"].astype(str), chunks["text"].str.len()))
    prompts = {method: prompt_characters(pd.read_parquet(runs[p.methods.index(method)]), lengths[p.chunks[method]], k)
               for method in p.methods}
    columns = ["method", "p95_ms", "ram_bytes", "disk_bytes", "dimensions", "usd_per_1k"]
    served = serving[columns].astype({c: "float64" for c in columns[1:]})
    return served.assign(prompt_chars=lambda f: f["method"].map(prompts))


def main(snakemake):
    p = snakemake.params
    aggregate = pd.read_parquet(snakemake.input.aggregate)
    questions = pd.read_parquet(snakemake.input.questions, columns=["qid"])
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    seconds = {path: read_benchmark(path) for path in snakemake.input.benchmarks}
    usage = {bench: json.loads(Path(path).read_text()) for bench, path in p.api_usage.items()}
    timings = {bench: read_timing(path) for bench, path in p.timings.items()}
    cost = cost_table(p.cost_plan, seconds, len(questions), usage, timings)
    decision = {"types": p.method_types, "inputs": p.method_inputs, "settings": p.decision}
    pairs = pd.read_parquet(snakemake.input.pairs)
    metric, k = p.report["headline"][0]
    serving = read_serving(snakemake.input.serving)
    table = frontier(aggregate, pairs, p.report["grain"], metric, k, p.report["alpha"],
                     frontier_costs(p, list(snakemake.input.runs), serving, k), p.decision.get("latency_budget_ms"))
    margin = next((delta for m, cut, delta in p.margins if (m, cut) == (metric, k)), None)
    label = metric_label(metric, k)
    save(frontier_plot(table, label, f"{p.dataset} {manifest['version']}: {label} against cost",
                       p.decision.get("latency_budget_ms")),
         snakemake.output.frontier_png, snakemake.output.frontier_svg)
    indexes = {method: json.loads(Path(path).read_text()) for method, path in p.index_stats.items()}
    costs = draft_banner(p.drafts) + cost_page(aggregate, cost, p.report, p.dataset, manifest["version"], pairs,
                                               decision, table, margin, Path(snakemake.output.frontier_png).name,
                                               indexes, serving, parquet_metadata(snakemake.input.serving))
    write_text(markdown_html(costs, f"cost {p.dataset} {manifest['version']}"), snakemake.output.cost_html)
    write_text(costs, snakemake.output.cost)


run_script(main, snakemake)
