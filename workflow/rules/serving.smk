# The serving probe (records/serving.py, retrieval/serving.py): every method's query path timed one question at a
# time in a warm process, no cache, into each version's serving.parquet, which only the cost page reads. One job for
# all versions: models and indexes load once, and a question two versions share is timed once.
from types import SimpleNamespace

from rankbench.configuration.defaults import COST_DEFAULTS
from rankbench.retrieval.registry import method_inputs, method_type

COST = {**COST_DEFAULTS, **config.get("cost", {})}


def serve_setup(method, qset):
    """What a method's serve hook reads in one version ({"inputs", "params"}), None when the probe cannot run its path
    (its type has no `serve` hook or registers no setup, or the setup says so)."""
    kind = method_type(METHOD_SPECS[method])
    if not (COST["probe"] and kind.serve and kind.run_rule in SERVE_SETUPS):
        return None
    return SERVE_SETUPS[kind.run_rule](method, qset)


def probed(method, qset=QSETS[0]):
    """Whether the probe runs a method's query path: it has a setup, and so have its inputs."""
    return serve_setup(method, qset) is not None and all(
        probed(name, qset) for name in method_inputs(METHOD_SPECS[method])
    )


def serve_setups(qset):
    """Method -> what its serve hook reads in one version, for every probed method."""
    return {m: serve_setup(m, qset) for m in METHODS if probed(m, qset)}


def recorded_timings(qset):
    """Method -> the timing records of its query-side jobs in one version (the latencies its run recorded), for the
    methods the probe does not run."""
    wildcards = SimpleNamespace(qset=qset)
    plan, records = cost_plan(wildcards), timing_records(wildcards)
    return {
        m: sorted({records[path] for _, side, path in plan[m] if path in records})
        for m in METHODS
        if not probed(m, qset)
    }


def probe_booking(wildcards):
    """Every core of the run: no other job of it runs beside the probe and slows what it times (the probe itself uses
    `cost.probe_threads`); the probe's own threads when the run gives no core count."""
    try:
        return max(int(workflow.cores), COST["probe_threads"])
    except Exception:  # noqa: BLE001 - no --cores (a dry run of some kinds): book what the probe uses
        return COST["probe_threads"]


rule serve_probe:
    input:
        questions=expand(f"{R}/{{qset}}/questions.parquet", qset=QSETS),
        # after the runs, so it times a settled machine (and reads the records of what it cannot run)
        runs=expand(run_path("{method}", "{qset}"), method=METHODS, qset=QSETS),
        files=sorted(
            {path for q in QSETS for setup in serve_setups(q).values() for path in setup["inputs"].values()}
        ),
        timings=sorted(
            {path for q in QSETS for paths in recorded_timings(q).values() for path in paths}
        ),
    output:
        serving=expand(f"{R}/{{qset}}/serving.parquet", qset=QSETS),
    log:
        f"{LOGS}/serve_probe.log",
    benchmark:
        f"{R}/benchmarks/serve_probe.tsv"
    conda:
        "../../environment.yml"
    threads: probe_booking
    resources:
        mem_mb=4000,
    params:
        versions={q: {"setups": serve_setups(q), "recorded": recorded_timings(q)} for q in QSETS},
        inputs={m: method_inputs(METHOD_SPECS[m]) for m in METHODS},
        specs={m: method_spec(m) for m in METHODS},
        cost=COST,
        quick=QUICK,
        seed=EVALUATION["seed"],
        depth=EVALUATION["depth"],
        numba_cache=f"{R}/cache/numba",
    script:
        "../scripts/serve_probe.py"
