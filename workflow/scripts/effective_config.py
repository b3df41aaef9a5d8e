"""Write the effective config of one question-set version: the config as the run used it, every default filled in
and grids expanded (the comparison page shows it too)."""

import json

from rankbench.io.files import write_text
from rankbench.pipeline.config import expand_methods
from rankbench.pipeline.defaults import config_yaml, effective_config
from rankbench.pipeline.scripting import run_script


def main(snakemake):
    config = json.loads(snakemake.params.config_json)
    effective = config_yaml(effective_config(config, expand_methods(config["methods"], "config")))
    write_text(effective, snakemake.output.effective_config)


run_script(main, snakemake)
