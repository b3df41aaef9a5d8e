"""Build one FAISS index (exact, HNSW or IVF; float or compressed) over the chunk embeddings, and record its size
and build time (for the cost page and the vector-size page)."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
import time
from pathlib import Path

import numpy as np

from rankbench.errors import InputError
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_text
from rankbench.retrieval.dense import IndexSpec, build_index, save_index


def main(snakemake):
    spec = IndexSpec.from_config(snakemake.params.spec)
    vectors = np.load(snakemake.input.embeddings)
    start = time.perf_counter()
    try:
        index = build_index(vectors, spec)
    except ValueError as error:  # a dimension the vectors cannot give (known only once they exist)
        raise InputError(snakemake.input.embeddings, None, f"cannot build index {spec.name}: {error}",
                         "Change the methods' `index` that name it (docs/reference/config.md, `index`).") from None
    build_s = time.perf_counter() - start
    save_index(index, snakemake.output.index)
    write_text(json.dumps({"build_s": round(build_s, 4), "bytes": Path(snakemake.output.index).stat().st_size,
                           "dimensions": int(index.d), "vectors": int(index.ntotal),
                           "float_bytes": int(vectors.nbytes)}, indent=1, sort_keys=True) + "\n",
               snakemake.output.stats)


run_script(main, snakemake)
