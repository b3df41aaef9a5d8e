"""Write the cost page of one question-set version: seconds per question and one-time seconds, calls and tokens
billed beside the headline metrics (Markdown, HTML)."""

import json
from pathlib import Path

import pandas as pd

from rankbench.io.files import write_text
from rankbench.pipeline.cost import cost_table, read_benchmark
from rankbench.pipeline.scripting import run_script
from rankbench.pipeline.timing import read_timing
from rankbench.report.comparison import cost_page
from rankbench.report.pages import draft_banner, markdown_html


def main(snakemake):
    p = snakemake.params
    aggregate = pd.read_parquet(snakemake.input.aggregate)
    questions = pd.read_parquet(snakemake.input.questions, columns=["qid"])
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    seconds = {path: read_benchmark(path) for path in snakemake.input.benchmarks}
    usage = {bench: json.loads(Path(path).read_text()) for bench, path in p.api_usage.items()}
    timings = {bench: read_timing(path) for bench, path in p.timings.items()}
    cost = cost_table(p.cost_plan, seconds, len(questions), usage, timings)
    indexes = {method: json.loads(Path(path).read_text()) for method, path in p.index_stats.items()}
    costs = draft_banner(p.drafts) + cost_page(aggregate, cost, p.report, p.dataset, manifest["version"], indexes)
    write_text(markdown_html(costs, f"cost {p.dataset} {manifest['version']}"), snakemake.output.cost_html)
    write_text(costs, snakemake.output.cost)


run_script(main, snakemake)
