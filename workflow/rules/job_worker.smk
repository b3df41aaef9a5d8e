# Which job worker serves a rule's script (docs/concepts/pipeline.md, one process for the jobs): its `script:` says
# so, `script: in_worker("../scripts/evaluate.py")`; read by a run and by a study across datasets alike.
from rankbench.execution.local_run import declare_script_worker


def in_worker(script, worker="light"):
    """A rule's `script:` served by the run's job worker (`worker="model"`: the model worker, for a script that
    loads encoder or reranker models); the script's first line is `hand_over(snakemake, __file__)`.
    """
    return declare_script_worker(workflow, script, worker)
