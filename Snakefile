from snakemake.utils import min_version

from rankbench.io.config_file import read_configs

min_version("9.0")


# The demo config, unless the user gives their own with --configfile (which replaces it; several are merged).
CONFIG_FILES = [str(path) for path in workflow.overwrite_configfiles] or [
    "config/config.yaml"
]
CONFIG_SOURCE = CONFIG_FILES[-1]
# Every config file read again with a bounded safe YAML loader, replacing what Snakemake's own loader built
# (it accepts python/name tags and keeps the last of duplicate keys): see README, "Safe by construction".
config.clear()
config.update(read_configs(CONFIG_FILES, workflow.config_settings.config))


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/queries.smk"
include: "workflow/rules/retrieve.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/llm_common.smk"
include: "workflow/rules/llm.smk"


check_outputs(all_outputs(), RESULTS_FOLDER, CONFIG_SOURCE)


rule all:
    input:
        all_outputs(),
