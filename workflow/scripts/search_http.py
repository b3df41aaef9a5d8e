"""Ask a search endpoint (`type: http`) every question, through the response cache, and freeze its answers as the
run Parquet, with the endpoint's provenance and each question's latency in the file's metadata (and in the job's
timing record, for the cost page)."""

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.ranked_lists import report_unknown_documents
from rankbench.records.timing import Timing
from rankbench.retrieval.http_search import http_spec, search_run


def main(snakemake):
    name, depth = snakemake.wildcards.method, snakemake.params.depth
    spec = http_spec(snakemake.params.spec, depth)
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "doc_id"]) \
        if "chunks" in snakemake.input.keys() else None  # noqa: SIM118 (a Namedlist: `in` alone tests its values)
    questions = pd.read_parquet(snakemake.input.questions)
    run, record, cached = search_run(spec, questions, depth, snakemake.params.cache, name, chunks)
    documents = pd.read_parquet(snakemake.input.documents, columns=["doc_id"])["doc_id"]
    report_unknown_documents(run, documents, f"the answers of {spec.endpoint}", name)
    write_parquet(run, snakemake.output.run, metadata=record)
    timing = Timing()  # each question's round trip as the endpoint took it; cached answers cost nothing this time
    timing.cached(cached)
    for qid in record["latency_ms"].keys() - set(cached):
        timing.took(qid, record["latency_ms"][qid] / 1000)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
