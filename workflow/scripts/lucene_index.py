"""Build one lucene method's Lucene index over the chunks with Anserini's IndexCollection, and record what built it
(Anserini version, jar sha256, Java version, analyzer) beside it for the runs' provenance."""

import json
from pathlib import Path

import pandas as pd

from rankbench.corpus.chunking import passage_text
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.retrieval.lucene import Engine, analyzer_from_keys, build_index, engine_record


def main(snakemake):
    engine, lucene = Engine(**snakemake.params.engine), analyzer_from_keys(snakemake.params.analyzer)
    chunks = pd.read_parquet(snakemake.input.chunks)
    build_index(engine, passage_text(chunks), lucene, Path(snakemake.output.index), snakemake.threads,
                snakemake.resources.mem_mb)
    record = {**engine_record(engine, snakemake.params.analyzer), "passages": len(chunks)}
    write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", snakemake.output.engine)


run_script(main, snakemake)
