"""Every part of Snakemake that is not its public interface and that a local run's job worker relies on, in one
place, with the Snakemake versions it was checked against: the executor's settings (does this run execute its jobs
here?), the scheduler's rate limiter, the base folder of the rules file being read, and the runner of Python script
jobs (snakemake.script.PythonScript: its job's fields, its Snakemake object, its benchmark record, its shell). On a
Snakemake not in CHECKED_VERSIONS the run uses none of them: no worker, every job a process of its own
(execution/local_run.py says so once in the run's output). Snakemake itself is imported only when one of these is
called: a job's own process never loads it through here."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rankbench.execution.job_worker import Launched

# The Snakemake versions whose internals below were read and tested (tests/execution/test_job_worker.py); the lock
# (requirements.lock) pins the first. Checking another: run those tests with it installed, then add it here.
CHECKED_VERSIONS = ("9.27.1",)


def snakemake_version() -> str:
    """The version of the Snakemake installed here."""
    import snakemake

    return str(snakemake.__version__)


def unchecked_version() -> str | None:
    """The installed Snakemake's version when the job worker was not checked against it; None when it was."""
    version = snakemake_version()
    return None if version in CHECKED_VERSIONS else version


def runs_jobs_here(workflow: Any) -> bool:
    """Whether this Snakemake run executes its jobs on this machine (not a cluster executor, a dry run or --touch)."""
    settings = workflow.executor_plugin.common_settings
    return not (settings.non_local_exec or settings.dryrun_exec or settings.touch_exec)


def stop_scheduler_polling(workflow: Any) -> None:
    """Drop Snakemake's limit of job starts per second, which is for submitting to a cluster: it re-arms a 1-second
    re-evaluation at every scheduling pass, and those timers add up (one more chain per finished job), so the demo's
    162 jobs made about 10,800 passes, each checking every ready job's inputs: a fifth of the run's CPU. Jobs run
    here are limited by --cores alone; the scheduler wakes when one ends."""
    scheduler = getattr(workflow, "scheduler", None)
    if scheduler is not None and hasattr(scheduler, "job_rate_limiter"):
        scheduler.job_rate_limiter = None


def rule_script_path(workflow: Any, script: str) -> str | None:
    """The real path of the file a rule's `script:` names, read relative to the rules file being parsed, as
    Snakemake reads it; None when no rules file is being read (Snakemake evaluates a rule's `script:` again in each
    of its jobs)."""
    if not workflow.included_stack:
        return None
    return os.path.realpath(os.path.join(workflow.current_basedir.get_path_or_uri(secret_free=True), script))


@dataclass(frozen=True)
class ScriptJob:
    """What a launcher needs of a Snakemake script job: its script's real path, the copy Snakemake runs (`fname`,
    the job's argv[0]), its Snakemake object, its threads, resources and log, and whether it may run outside its
    own process at all (local, and no conda, container or environment modules of its own)."""

    script: str
    fname: str
    snakemake: Any
    threads: int
    resources: Mapping[str, Any]
    log: list[str]
    plain: bool


def launch_python_scripts_with(launch: Callable[[ScriptJob], Launched | None]) -> None:
    """Have Snakemake's runner of Python script jobs (snakemake.script.PythonScript, which a local run calls in a
    thread of Snakemake's own process) offer each job to `launch` first. A job `launch` takes (not None) fails, when
    it failed, as a process with its exit status would (Snakemake's shell raises, naming the rule), and otherwise gets
    its benchmark record filled from what `launch` measured; a job it does not take runs in its own process."""
    from snakemake.script import PythonScript

    run_in_own_process = PythonScript.execute_script
    if getattr(run_in_own_process, "offered_to", None) is not None:
        return

    def execute_script(script_job: Any, fname: str, edit: bool = False) -> None:
        launched = None if edit else launch(_script_job(script_job, fname))
        if launched is None:
            run_in_own_process(script_job, fname, edit=edit)
            return
        if launched.exit_code != 0:  # the error a failed process gives, raised in its shell: no frame of ours shown
            script_job._execute_cmd(": {fname:q}; exit {code}", fname=fname, code=launched.exit_code)
        if script_job.bench_record is not None:  # after the shell, which benchmarks its command into the record too
            _fill_benchmark(script_job.bench_record, launched)

    execute_script.offered_to = launch  # type: ignore[attr-defined]
    PythonScript.execute_script = execute_script


def _script_job(script_job: Any, fname: str) -> ScriptJob:
    """The launcher's view of a snakemake.script.PythonScript job."""
    from snakemake.iocontainers import Snakemake

    snakemake = Snakemake(
        input_=script_job.input, output=script_job.output, params=script_job.params, wildcards=script_job.wildcards,
        threads=script_job.threads, resources=script_job.resources, log=script_job.log, config=script_job.config,
        rulename=script_job.rulename, bench_iteration=script_job.bench_iteration,
        scriptdir=script_job.path.get_basedir().get_path_or_uri(secret_free=True))
    plain = not (script_job.conda_env or script_job.container_img or script_job.env_modules) and script_job.is_local
    return ScriptJob(script=os.path.realpath(script_job.path.get_path_or_uri(secret_free=True)), fname=fname,
                     snakemake=snakemake, threads=script_job.threads, resources=script_job.resources,
                     log=list(snakemake.log), plain=plain)


def _fill_benchmark(record: Any, launched: Launched) -> None:
    """What the launcher measured of a job, in its Snakemake benchmark record (the rest stays NA)."""
    record.running_time = launched.seconds
    record.cpu_time = record.cpu_usage = launched.cpu_seconds
    record.max_rss = round(launched.peak_kb / 1024, 2)
    record.max_vms = record.max_uss = record.max_pss = record.io_in = record.io_out = "NA"
    record.data_collected = True
