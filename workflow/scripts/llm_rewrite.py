"""Rewrite every question of a version into a search query with the LLM (the rewrites file of the methods)."""

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_jsonl
from rankbench.llm.chat import chat_from_spec
from rankbench.llm.rewrite import rewrite_questions


def main(snakemake):
    rewrites = rewrite_questions(chat_from_spec(snakemake.params.llm), pd.read_parquet(snakemake.input.questions),
                                 snakemake.params.language)
    write_jsonl(rewrites, snakemake.output.rewrites)


run_script(main, snakemake)
