from snakemake.utils import min_version

from rankbench.io.config_file import read_configs
from rankbench.pipeline.study import MEMBER_SOURCE, is_study

min_version("9.0")


if MEMBER_SOURCE in config:
    # One dataset of a study: workflow/rules/study_common.smk loads this Snakefile as a module, with that dataset's
    # config read exactly as a run of it alone reads it (so both plan the same jobs) and the file it came from.
    CONFIG_SOURCE = config.pop(MEMBER_SOURCE)
else:
    # The demo config, unless the user gives their own with --configfile (which replaces it; several are merged).
    CONFIG_FILES = [str(path) for path in workflow.overwrite_configfiles] or [
        "config/config.yaml"
    ]
    CONFIG_SOURCE = CONFIG_FILES[-1]
    # Every config file read again with a bounded safe YAML loader, replacing what Snakemake's own loader built
    # (it accepts python/name tags and keeps the last of duplicate keys): see README, "Safe by construction".
    config.clear()
    config.update(read_configs(CONFIG_FILES, workflow.config_settings.config))


if is_study(config):

    include: "workflow/rules/study_common.smk"
    include: "workflow/rules/study.smk"

else:

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
