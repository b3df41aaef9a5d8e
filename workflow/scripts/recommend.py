"""Write the recommended configuration of one question-set version: recommended.yaml (the config fragment),
recommended.md (the box the comparison page and index.html open with) and recommended.json (what `rankbench
recommend` exits on), from the per-question tables the run already wrote."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the run's job worker, its libraries loaded, when one serves it

import json
from pathlib import Path

import pandas as pd

from rankbench.analysis.recommend_axes import RunTables, per_question, recommend
from rankbench.configuration.defaults import method_settings
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.report.recommend import box_lines, fragment_yaml, state


def main(snakemake):
    p, given = snakemake.params, snakemake.input
    settings = {**p.settings, "headline": [tuple(item) for item in p.settings["headline"]],
                "margins": {(metric, int(k)): float(delta) for metric, k, delta in p.settings["margins"]}}
    tables = RunTables(
        values=per_question([*given.metrics, *given.evidence]),
        methods={m: method_settings(spec) for m, spec in p.methods.items()},
        chunkers=p.chunkers, chunker_specs=p.config["chunkers"],
        index_stats={m: json.loads(Path(path).read_text()) for m, path in p.stats.items()},
        twins=p.twins, top1=pd.read_parquet(given.top1) if given.top1 else None, settings=settings)
    rec = recommend(tables)
    target = settings["target"]
    write_text(fragment_yaml(rec, p.config, p.methods, p.config["chunkers"], target, p.dataset,
                             snakemake.wildcards.qset), snakemake.output.fragment)
    write_text("\n".join(box_lines(rec, target)), snakemake.output.box)
    write_text(json.dumps(state(rec, target), indent=2, sort_keys=True) + "\n", snakemake.output.state)


run_script(main, snakemake)
