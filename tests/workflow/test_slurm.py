"""The SLURM profile on a live cluster (`scripts/slurm-cluster.sh start`; .ci/run starts it): a tiny BEIR dataset,
BM25 only, run through `snakemake --profile profiles/slurm`, one of its jobs killed with scancel on the way.
Every job must go through sbatch with its rule's resources, the killed job must be retried, and the results must
equal a local run's byte for byte (the pages' date line apart)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from workflow_helpers import REPO, SNAKEMAKE, copy_dataset, edit_config, snakemake

FIXTURE = Path("tests/fixtures/beir-tiny")
TARGET = "results/beir-tiny/test/comparison.md"  # 13 jobs: corpus, index, run, evaluation, tables, one page
KILLED = "load_corpus"
# The page line that says when it was written (comparison.md and .html).
DATE_LINE = re.compile(rb"^(- |<li>)date: .*$", re.MULTILINE)
# The cost pages show this run's job timings (wall-clock seconds from the benchmark files, which are left out
# too): compared with every number blanked; their quality figures are those of the comparison pages.
COST_PAGES = {"cost.md", "cost.html"}
NUMBER = re.compile(rb"\d+(\.\d+)?")


def _cluster_state() -> str | None:
    """Why the test cannot run here, or None when a cluster is up and the executor plugin is installed."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')"
    if shutil.which("scontrol") is None:
        return "no SLURM client commands (start a cluster as root: scripts/slurm-cluster.sh start)"
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
    if "is UP" not in ping.stdout:
        return "no SLURM cluster is up (start one as root: scripts/slurm-cluster.sh start)"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_cluster_state() is not None, reason=str(_cluster_state()))]


def _small_config(config: dict) -> None:
    """One question set and one method: the fewest jobs that still reach a page."""
    config["qsets"] = {"test": config["qsets"]["test"]}
    config["methods"] = {"bm25": config["methods"]["bm25"]}
    del config["diffs"]


def _workdir(root: Path) -> Path:
    """A copy of beir-tiny with the small config as config.yaml."""
    workdir = copy_dataset(FIXTURE / "config.yaml", [FIXTURE], root)
    (workdir / "config.yaml").write_text((workdir / edit_config(workdir, _small_config, "small.yaml")).read_text())
    return workdir


def _job_comp_log() -> Path:
    """The cluster's job-completion log (JobCompLoc): one line per finished job, with its allocation."""
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"^JobCompLoc\s*=\s*(\S+)", config, re.MULTILINE)
    assert match, "the cluster writes no job-completion log (JobCompType=jobcomp/filetxt, see slurm-cluster.sh)"
    return Path(match.group(1))


def _cancel_when_running(process: subprocess.Popen, workdir: Path, rule: str) -> str:
    """scancel the rule's SLURM job of this workdir as soon as it runs; its SLURM job id."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the workflow ended before its {rule} job ran"
        queue = subprocess.run(["squeue", "--noheader", "--format=%i|%k|%T|%Z"], capture_output=True, text=True,
                               check=True).stdout
        for line in queue.splitlines():
            job_id, comment, state, job_workdir = line.strip().split("|")
            if comment == f"rule_{rule}" and state == "RUNNING" and Path(job_workdir) == workdir:
                subprocess.run(["scancel", job_id], check=True)
                return job_id
        time.sleep(0.2)
    raise AssertionError(f"the {rule} job was not seen running within 10 minutes")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The small config run locally and on SLURM (its load_corpus job cancelled once), with the SLURM run's log."""
    local = _workdir(tmp_path_factory.mktemp("local"))
    result = snakemake(local, "--cores", "2", TARGET)
    assert result.returncode == 0, result.stderr[-3000:]

    cluster = _workdir(tmp_path_factory.mktemp("slurm"))
    comp_log = _job_comp_log()
    comp_offset = comp_log.stat().st_size if comp_log.exists() else 0
    # No accounting database on the test cluster: job states come from squeue (finished jobs stay listed for
    # MinJobAge = 300 s); --verbose logs each sbatch call.
    command = SNAKEMAKE + ["-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(cluster), "--configfile",
                           str(cluster / "config.yaml"), "--profile", str(REPO / "profiles/slurm"),
                           "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2",
                           "--verbose", TARGET]
    started = time.monotonic()
    with open(cluster / "slurm-run.log", "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=cluster)
        try:
            cancelled = _cancel_when_running(process, cluster, KILLED)
            returncode = process.wait(timeout=1800)
        finally:
            if process.poll() is None:
                process.kill()
                run_uuid = _run_uuid((cluster / "slurm-run.log").read_text())
                if run_uuid:
                    subprocess.run(["scancel", "--name", run_uuid])
    text = (cluster / "slurm-run.log").read_text()
    assert returncode == 0, text[-5000:]
    with open(comp_log, "rb") as handle:
        handle.seek(comp_offset)
        completions = handle.read().decode()
    print(f"SLURM run: {time.monotonic() - started:.0f} s")
    return {"local": local, "cluster": cluster, "log": text, "cancelled": cancelled, "completions": completions}


def _run_uuid(log: str) -> str | None:
    """The SLURM job name the plugin gives every job of a run."""
    match = re.search(r"--job-name (\S+)", log)
    return match.group(1) if match else None


def _submissions(log: str) -> list[tuple[str, str]]:
    """(rule, SLURM job id) of every submission, in order, from the Snakemake log."""
    pattern = re.compile(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+)/")
    return [(rule, slurm_id) for slurm_id, rule in pattern.findall(log)]


def _declared(log: str) -> dict[str, dict[str, int]]:
    """Per rule, the threads, mem_mb and runtime Snakemake gave its job (the `rule X:` blocks of the log)."""
    declared = {}
    for block in re.split(r"\n(?=\[[^\]]+\]\n)", log):
        rule = re.search(r"^rule (\w+):$", block, re.MULTILINE)
        resources = re.search(r"^\s+resources: (.*)$", block, re.MULTILINE)
        if rule and resources:
            values = dict(item.split("=", 1) for item in resources.group(1).split(", "))
            threads = re.search(r"^\s+threads: (\d+)$", block, re.MULTILINE)
            declared[rule.group(1)] = {"cpus": int(threads.group(1)) if threads else 1,
                                       "mem_mb": int(values["mem_mb"]), "runtime": int(values["runtime"])}
    return declared


def _completions(text: str) -> dict[str, dict[str, str]]:
    """Job-completion records by SLURM job id: key=value fields (JobState, TimeLimit, ProcCnt, Tres, Name...)."""
    records = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        records[fields["JobId"]] = fields
    return records


def test_every_job_went_through_sbatch(runs: dict) -> None:
    """Each job Snakemake scheduled was submitted to SLURM and the cluster recorded it; nothing ran locally."""
    log = runs["log"]
    submitted = {rule for rule, _ in _submissions(log)}
    assert submitted == set(_declared(log)), "a scheduled job has no SLURM job id"
    assert len(submitted) == 14  # every rule that config schedules (the page and its recommendation, not the index)
    assert "localrule" not in log
    records = _completions(runs["completions"])
    run_uuid = _run_uuid(log)
    for rule, slurm_id in _submissions(log):
        assert slurm_id in records, f"SLURM never recorded job {slurm_id} ({rule})"
        assert records[slurm_id]["Name"] == run_uuid


def test_rule_resources_reached_sbatch_and_the_allocation(runs: dict) -> None:
    """--cpus-per-task, --mem and -t of every sbatch call, and what SLURM allocated, are the rule's."""
    log = runs["log"]
    declared = _declared(log)
    calls = re.findall(r"^sbatch call: (sbatch .*)$", log, re.MULTILINE)
    assert len(calls) == len(_submissions(log))
    for call in calls:
        rule = re.search(r"--comment rule_(\w+?)(?:_wildcards_\S*)? ", call).group(1)
        want = declared[rule]
        assert f"--cpus-per-task={want['cpus']} " in call, call
        assert f" --mem {want['mem_mb']} " in call, call
        assert f" -t {want['runtime']} " in call, call
    records = _completions(runs["completions"])
    for rule, slurm_id in _submissions(log):
        want, got = declared[rule], records[slurm_id]
        assert (int(got["ProcCnt"]), got["TimeLimit"]) == (want["cpus"], str(want["runtime"])), (rule, got)
        assert f"mem={want['mem_mb']}M" in got["Tres"], (rule, got)
    # The rules' own resources, not only the profile's defaults (mem_mb 4000, runtime 60), reached SLURM.
    assert {(want["mem_mb"], want["runtime"]) for want in declared.values()} - {(4000, 60)}


def test_cancelled_job_is_reported_and_retried(runs: dict) -> None:
    """The scancel'ed job shows as CANCELLED in the log, is submitted again and completes; all others once."""
    log, cancelled = runs["log"], runs["cancelled"]
    records = _completions(runs["completions"])
    ids = [slurm_id for rule, slurm_id in _submissions(log) if rule == KILLED]
    assert ids[0] == cancelled and len(ids) == 2, ids
    assert records[cancelled]["JobState"] == "CANCELLED"
    assert records[ids[1]]["JobState"] == "COMPLETED"
    assert re.search(rf"SLURM-job '{cancelled}' failed, SLURM status is: 'CANCELLED'", log)
    others = [slurm_id for rule, slurm_id in _submissions(log) if rule != KILLED]
    assert all(records[slurm_id]["JobState"] == "COMPLETED" for slurm_id in others)
    assert len(others) == len(set(rule for rule, _ in _submissions(log))) - 1


def test_results_equal_a_local_run(runs: dict) -> None:
    """Every result file byte for byte (job timings, side caches and the pages' date line apart)."""
    def files(workdir: Path) -> set[Path]:
        # Not compared: the job timings (benchmarks/, timings/), the side caches (cache/: embeddings, numba's
        # compiled code), the serving probe's table and the cost page's frontier plot (this run's timings).
        return {path.relative_to(workdir) for path in (workdir / "results").rglob("*")
                if path.is_file() and not {"benchmarks", "timings", "cache"} & set(path.parts)
                and not path.name.startswith(("frontier.", "serving."))}

    local, cluster = runs["local"], runs["cluster"]
    assert files(local) == files(cluster)
    assert len(files(local)) > 20
    for path in sorted(files(local)):
        ours, theirs = (cluster / path).read_bytes(), (local / path).read_bytes()
        if path.suffix in (".md", ".html"):
            ours, theirs = DATE_LINE.sub(b"", ours), DATE_LINE.sub(b"", theirs)
        if path.name in COST_PAGES:
            ours, theirs = NUMBER.sub(b"#", ours), NUMBER.sub(b"#", theirs)
        assert ours == theirs, f"{path} differs from the local run's"
