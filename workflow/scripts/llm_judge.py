"""Judge the pooled top-k of every method with the LLM; write the judgements and the merged question-set version."""

import pandas as pd

from rankbench.analysis.pooling import top_k_pool
from rankbench.execution.scripting import run_script
from rankbench.io.files import write_jsonl, write_parquet
from rankbench.llm.chat import chat_from_spec
from rankbench.llm.judge import judge_pool, merge_labels
from rankbench.llm.versions import version_records


def main(snakemake):
    questions = pd.read_parquet(snakemake.input.questions)
    labels = pd.read_parquet(snakemake.input.labels)
    pooled = top_k_pool({path: pd.read_parquet(path) for path in snakemake.input.runs}, snakemake.params.depth)
    judged = judge_pool(chat_from_spec(snakemake.params.llm), pooled, questions, labels,
                        pd.read_parquet(snakemake.input.chunks))
    write_jsonl(version_records(questions, merge_labels(labels, judged)), snakemake.output.version)
    write_parquet(judged, snakemake.output.judgements)


run_script(main, snakemake)
