from snakemake.utils import min_version, validate

min_version("9.0")


# The demo config, unless the user gives their own with --configfile (which would otherwise be merged into it).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/queries.smk"
include: "workflow/rules/retrieve.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/llm_common.smk"
include: "workflow/rules/llm.smk"


rule all:
    input:
        all_outputs(),
