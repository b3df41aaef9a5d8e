# The serving probe's settings and helpers, for serving.smk; which methods it runs, what each one's query path
# reads, and the recorded latencies of the others.
from types import SimpleNamespace

from rankbench.configuration.defaults import COST_DEFAULTS
from rankbench.retrieval.registry import method_inputs, method_type

COST = {**COST_DEFAULTS, **config.get("cost", {})}


def serve_setup(method, qset):
    """What a method's serve hook reads in one version ({"inputs", "params"}), None when the probe cannot run its path
    (its type has no `serve` hook or registers no setup, or the setup says so)."""
    kind = method_type(METHOD_SPECS[method])
    setup = SERVE_SETUPS.get(kind.run_rule)
    return setup(method, qset) if COST["probe"] and kind.serve and setup else None


def probed(method, qset=QSETS[0]):
    """Whether the probe runs a method's query path: it has a setup, and so have its inputs."""
    return serve_setup(method, qset) is not None and all(
        probed(name, qset) for name in method_inputs(METHOD_SPECS[method])
    )


def serve_setups(qset):
    """Method -> what its serve hook reads in one version, for every probed method."""
    return {m: serve_setup(m, qset) for m in METHODS if probed(m, qset)}


def recorded_timings(qset):
    """Method -> the timing records of its query-side jobs in one version (the latencies its run recorded): what the
    methods the probe does not run show, and a probed one whose service does not answer the probe.
    """
    wildcards = SimpleNamespace(qset=qset)
    plan, records = cost_plan(wildcards), timing_records(wildcards)
    return {
        m: sorted({records[path] for _, side, path in plan[m] if path in records})
        for m in METHODS
    }


def probe_booking(wildcards):
    """Every core of the run: no other job of it runs beside the probe and slows what it times (the probe itself uses
    `cost.probe_threads`); the probe's own threads when the run gives no core count."""
    try:
        return max(int(workflow.cores), COST["probe_threads"])
    except (
        Exception
    ):  # noqa: BLE001 - no --cores (a dry run of some kinds): book what the probe uses
        return COST["probe_threads"]
