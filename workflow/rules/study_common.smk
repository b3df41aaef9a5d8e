# A study across datasets (docs/reference/config.md, "Studies across datasets"): each dataset config is this workflow loaded
# as a Snakemake module (rules `<dataset>_<rule>`, same outputs as a run of that config alone, so results are
# shared both ways); workflow/rules/study.smk then builds one table over all of them.
import yaml

from rankbench.execution.local_run import end_local_run, start_local_run
from rankbench.io.loaders import SCHEMA_FOLDER
from rankbench.project.study import (
    MemberView,
    read_members,
    study_outputs,
    study_plan,
)

STUDY_MEMBERS = read_members(
    config,
    yaml.safe_load((SCHEMA_FOLDER / "study.schema.yaml").read_text()),
    CONFIG_SOURCE,
)
STUDY_MODULES = {m.module: m for m in STUDY_MEMBERS.values()}

for member in STUDY_MODULES.values():
    study_module, study_prefix = member.module, member.prefix

    module:
        name: study_module
        snakefile:
            "../Snakefile"
        config:
            member.module_config()

    use rule * from study_module as study_prefix*


# What each dataset module computed (its common.smk values), for the plan and the targets.
STUDY_VIEWS = {}
for label, member in STUDY_MEMBERS.items():
    loaded = globals()[member.module]
    STUDY_VIEWS[label] = MemberView(
        source=member.source,
        dataset=loaded.DATASET["name"],
        results=loaded.R,
        qsets=loaded.QSETS,
        method_types={m: spec["type"] for m, spec in loaded.METHOD_SPECS.items()},
        evaluation=loaded.EVALUATION,
        drafts=loaded.DRAFTS,
    )
STUDY_PLAN = study_plan(config, CONFIG_SOURCE, STUDY_VIEWS)


# The datasets' jobs run in the run's job workers as in a run of each alone (a module's own hooks are not the run's):
# the model worker loads the slow libraries of every dataset's encoders.
onstart:
    start_local_run(
        workflow,
        sorted(
            {
                library
                for member in STUDY_MODULES.values()
                for library in globals()[member.module].WORKER_MODULES
            }
        ),
    )


onsuccess:
    end_local_run()


onerror:
    end_local_run()


STUDY_OUTPUTS = study_outputs(STUDY_PLAN["name"], STUDY_PLAN["metrics"])


def all_outputs():
    """Every dataset's outputs (as a run of its config alone) and the study's."""
    outputs = [
        path
        for member in STUDY_MODULES.values()
        for path in globals()[member.module].all_outputs()
    ]
    return outputs + list(STUDY_OUTPUTS.values())
