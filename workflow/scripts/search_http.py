"""Ask a search endpoint (`type: http`) every question, through the response cache, and freeze its answers as the
run Parquet, with the endpoint's provenance and each question's latency in the file's metadata."""

import pandas as pd

from rankbench.io.files import write_parquet
from rankbench.io.runs import report_unknown_documents
from rankbench.pipeline.scripting import run_script
from rankbench.retrieval.http_search import http_spec, search_run


def main(snakemake):
    name, depth = snakemake.wildcards.method, snakemake.params.depth
    spec = http_spec(snakemake.params.spec, depth)
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "doc_id"]) \
        if "chunks" in snakemake.input.keys() else None  # noqa: SIM118 (a Namedlist: `in` alone tests its values)
    run, record = search_run(spec, pd.read_parquet(snakemake.input.questions), depth, snakemake.params.cache, name,
                             chunks)
    documents = pd.read_parquet(snakemake.input.documents, columns=["doc_id"])["doc_id"]
    report_unknown_documents(run, documents, f"the answers of {spec.endpoint}", name)
    write_parquet(run, snakemake.output.run, metadata=record)


run_script(main, snakemake)
