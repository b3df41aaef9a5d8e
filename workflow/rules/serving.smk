# The serving probe (records/serving.py, retrieval/serving.py): every method's query path timed one question at a
# time in a warm process, no cache, into each version's serving.parquet, which only the cost page reads. One job for
# all versions: models and indexes load once, and a question two versions share is timed once. Helpers in
# serving_common.smk.


rule serve_probe:
    input:
        questions=expand(f"{R}/{{qset}}/questions.parquet", qset=QSETS),
        # after the runs, so it times a settled machine (and reads the records of what it cannot run)
        runs=expand(run_path("{method}", "{qset}"), method=METHODS, qset=QSETS),
        files=sorted(
            {
                path
                for q in QSETS
                for setup in serve_setups(q).values()
                for path in setup["inputs"].values()
            }
        ),
        timings=sorted(
            {
                path
                for q in QSETS
                for paths in recorded_timings(q).values()
                for path in paths
            }
        ),
        # what serving each method takes (records/footprint.py): the records of its priced calls (the files it reads
        # are there once its runs are: some, a vector database's folder, are no rule's declared output)
        priced_records=sorted(
            {
                path
                for q in QSETS
                for found in priced_records(q).values()
                for _, path in found
            }
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
        versions={
            q: {"setups": serve_setups(q), "recorded": recorded_timings(q)}
            for q in QSETS
        },
        inputs={m: method_inputs(METHOD_SPECS[m]) for m in METHODS},
        specs={m: method_spec(m) for m in METHODS},
        cost=COST,
        served=served_files(),
        priced_records={q: priced_records(q) for q in QSETS},
        prices=PRICES,
        quick=QUICK,
        seed=EVALUATION["seed"],
        depth=EVALUATION["depth"],
        numba_cache=f"{R}/cache/numba",
    script:
        in_worker("../scripts/serve_probe.py", worker="model")
