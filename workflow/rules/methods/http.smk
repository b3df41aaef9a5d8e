# Method type http: a search endpoint's answers; helpers in http_common.smk.


# A search endpoint's answers (`type: http`), through the response cache; the run file's metadata holds the
# endpoint's provenance and each question's latency.
rule search_http:
    input:
        unpack(search_http_inputs),
    output:
        run=run_path("{method}"),
        timing=f"{R}/timings/retrieve/{{qset}}/{{method}}.json",
    log:
        f"{LOGS}/retrieve/{{qset}}/{{method}}.log",
    benchmark:
        f"{R}/benchmarks/retrieve/{{qset}}/{{method}}.tsv"
    wildcard_constraints:
        method=choice(methods_of_rule("search_http")),
    # every run before the evaluation that waits for it: see Priorities in resources.smk
    priority: 6
    conda:
        "../../../environment.yml"
    threads: 1
    params:
        spec=lambda wildcards: method_spec(wildcards.method),
        depth=EVALUATION["depth"],
        cache=HTTP_SEARCH_CACHE,
    script:
        "../../scripts/search_http.py"
