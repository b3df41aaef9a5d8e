"""Rank chunks for every question by cosine similarity in a FAISS index (exact, approximate or compressed, its
candidates optionally re-scored in float), optionally filtered."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import numpy as np
import pandas as pd

from rankbench.corpus.filters import ChunkMasks, chunk_masks
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_parquet
from rankbench.io.ranked_lists import run_from_topk
from rankbench.records.timing import Timing
from rankbench.retrieval.dense import IndexSpec, load_index, search
from rankbench.retrieval.vector_checks import check_same_dimension


def main(snakemake):
    timing = Timing()
    with timing.once("load"):
        questions = pd.read_parquet(snakemake.input.questions)
        chunks = pd.read_parquet(snakemake.input.chunks)
        index, queries = load_index(snakemake.input.index), np.load(snakemake.input.queries)
        spec, depth = IndexSpec(**snakemake.params.index), snakemake.params.depth
        # a truncated index holds the first dimensions of the encoder's vectors; its queries are cut alike
        check_same_dimension(queries[:, :index.d] if spec.dimensions else queries, index.d, snakemake.input.queries,
                             snakemake.input.index)
        allowed = chunk_masks(questions, chunks, snakemake.params.filters)
        vectors = np.load(snakemake.input.vectors) if spec.rescore else None  # float vectors to re-score with

    def answer(i: int):
        """Question i alone (FAISS searches each query independently: the same lists as a batch)."""
        mask = None if allowed is None else ChunkMasks(allowed.group[i:i + 1], allowed.masks)
        return search(index, queries[i:i + 1], depth, spec, mask, vectors)

    found = timing.each(questions["qid"].tolist(), answer)
    width = min(depth, index.ntotal)
    positions = np.vstack([p for p, _ in found]) if found else np.empty((0, width), dtype=np.int64)
    scores = np.vstack([s for _, s in found]) if found else np.empty((0, width), dtype=np.float32)
    write_parquet(run_from_topk(questions["qid"], positions, scores, chunks, depth), snakemake.output.run)
    timing.write(snakemake.output.timing)


run_script(main, snakemake)
